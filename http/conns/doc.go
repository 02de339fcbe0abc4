// Package conns is the listener ticketd's HTTP server serves on: it
// bounds client connections in total and per client address, reclaims
// the connection idle the longest for a newcomer at the bound, and
// retries accept errors (running out of file descriptors included) with a
// backoff instead of ending Serve. The server (http.Server.Serve) wraps
// its listener in New and sets State as fasthttp's ConnState hook; the
// answers to refused connections are the server's (Config.Refuse429,
// Refuse503), so the package knows no response format. IPKey is the
// address every per-client bound counts, the server's rate budgets too.
//
// A connection's deadlines are armed lazily (lazyDeadline): before the
// next read or write rather than when fasthttp sets them (three a
// request), and an armed one early by at most 1/16 of the time left
// stands for a later one, so a kept-alive connection arms about once a
// second; an earlier deadline, or none, is armed as asked, so ReadTimeout
// and IdleTimeout hold (never late, at most 1/16 early).
//
// # Concurrency
//
// Every method of a Listener is safe for concurrent use: fasthttp accepts
// on one goroutine and serves each connection on its own. One mutex
// guards the set of connections, held for a few map operations per
// connection and for the linear scan of a reclaim, which runs only at the
// bound or out of descriptors. The per-request cost is two atomic stores
// (busy when the request's bytes arrive, idle in the State hook).
// Refused connections are answered off the accept loop by at most 32
// goroutines; beyond them a refused connection is closed unanswered.
//
// # Bounds
//
// Max (by default DefaultMax: half the descriptor limit, within 64 to
// 10,000), MaxPerIP (by default DefaultMaxPerIP, 1,024), refusing
// goroutines (32), the accept backoff (5 ms to 1 s), one warning per kind
// per 10 s.
package conns
