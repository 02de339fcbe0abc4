// Package http is ticketd's HTTP request pipeline on fasthttp and
// fasthttp/router: the server, the route table type (route.go), the
// per-request Ctx, the one error -> status map (errors.go), authentication,
// rate limits, idempotency, CORS, the access log and metrics. It knows no
// endpoint: the caller hands NewServer the route table (http/api builds
// it), and the same table drives the router and the OpenAPI documents
// (http/openapi). Request decoding is http/bind, the hosted pages
// http/pages, the connection listener http/conns, the developer log
// http/devlog (fed through Server.OnRequest).
//
// # Request pipeline
//
// For a table route the server, in order: stamps Request-Id,
// X-Content-Type-Options and (keyed surfaces) Cache-Control: no-store;
// echoes the service-version sent (when known; else the current one) so
// that every answer, a 401 included, carries it; authenticates by surface
// (Developer: Bearer sk_…, Storefront: Bearer pk_…, Admin: the admin token
// compared in constant time, Public: nothing) before anything else: a
// valid credential is served however many failures its IP made, and every
// failure, whatever its cause, answers the same 401 while it spends the
// client IP's failure bucket, then the same 429 AUTH_THROTTLED once the
// bucket is empty (decisions §17); a key the Authenticator cannot tell live or not
// (cluster mode: the directory's log unreadable) with 503
// DIRECTORY_UNAVAILABLE and Retry-After: 1, charged to nothing; checks a storefront request's
// Origin against the key's origins (401 when not listed); picks the API
// version (the key's pin, or a known service-version header; an unknown
// one, or one sent empty, answers 400) and echoes it on /v1 and
// /storefront/v1; counts the request against its rate budgets, token
// buckets of half a minute's requests refilled continuously
// (RateLimit-* headers, 429 with Retry-After; on the storefront the per
// (key, client IP) budget, of order
// routes (Route.IPLimited) or of the rest, comes first, and what it
// refuses costs the key's budget nothing);
// claims the Idempotency-Key of a POST (one sent empty answers 400;
// scoped per API key, and on the storefront per publishable key and client
// address; on a RecordingStore the write commits the key's answer in its
// own batch, see idempotency_commit.go, and a write made before answers
// its record); refuses a non-empty body other than
// {} on routes without a Body; then calls the HandlerFunc and encodes its
// result as JSON with the route's success status. Errors of any stage use
// the one envelope of errors.go: *event.Error by its Code, *Error by its
// Status, context.DeadlineExceeded a 503, anything else a logged 500 that
// shows no internals. Unrouted paths answer 404, wrong methods 405, both
// in the envelope.
//
// # Request bodies
//
// Handlers decode with Ctx.Bind and Ctx.BindQuery (http/bind: a strict
// parser, every field problem reported at once, the `v` tag rules).
// Bodies over Config.MaxBodyBytes are refused by fasthttp before any
// handler runs, with a 413 envelope; the server drains what the client is
// still sending first, so the client reads the 413 instead of a connection
// reset.
//
// # Connections
//
// Serve wraps the listener (http/conns): accept errors, running out of
// file descriptors included, are retried with a backoff and never end
// Serve; connections are bounded in total (Config.MaxConns, by default
// half the descriptor limit) and per client address (MaxConnsPerIP); at
// the total bound the connection idle the longest is reclaimed for the
// newcomer. ReadTimeout lets a silent connection go with 408, IdleTimeout
// a kept-alive one. fasthttp sets three deadlines a request; the
// listener's connection arms them lazily, before the next read or write,
// and keeps an armed one that is early by at most 1/16 of the time left
// (conns, lazyDeadline): about one timer update a connection a second instead of
// three a request, and never a connection held past its timeout.
//
// # Concurrency
//
// fasthttp runs each request on its own goroutine. The Server is safe for
// concurrent use once built; Handle must be called before Serve. A Ctx is
// pooled and valid only until its handler returns, like the fasthttp
// RequestCtx it wraps. The rate limiter and the in-memory idempotency store
// each hold one mutex for a few map operations; the Authenticator and
// Config.OnRequest are called on the request goroutine and must be fast and
// safe for concurrent use.
//
// # Per-request cost
//
// A flash sale runs every request through this pipeline, so it keeps to a
// few rules (BenchmarkPipeline* in pipeline_bench_test.go measure them on
// the real stack): no syscall per request at log level warn (the access
// log line is skipped when info is off); metric series are resolved once
// per (operation, status); response headers every request carries are set
// in canonical form; the JSON parser, its node arena and the problem path
// are pooled, and the tree keeps member names and strings as slices of the
// body until a value is stored; error envelopes and audit entries are
// written by hand (the same bytes encoding/json gives, tested), and an
// audited write's result is encoded once for both the response and the
// audit log; the developer log (http/devlog) formats its entries when listed, not when
// recorded, and copies a request's path into its ring slot's own buffer
// (cut, for a drop's short paths, from one block per chunk of slots); a
// generated request id stays a number until something reads it
// (RequestInfo.ID, Ctx.RequestID), its header written from the stack.
// A drop's commonest answers cost less again: the sold-out refusal's
// envelope is rendered once at start (the general path's bytes, tested);
// a request's time is the one fasthttp read as it called the handler;
// Bind uses the route's prepared plan; a storefront caller's hold client
// id (a SHA-256) comes from a small lock-free cache by (key, address); a
// queue status is encoded by hand; and no error mapping puts an
// errors.As target on the heap for a refusal of the core. Plain valid
// bodies are bound in one pass (http/bind's fast path; anything else, and
// every refusal, is the general path's); the routes marked Route.Hot
// (orders, joins, polls, check-ins) are matched ahead of the router, their
// path parameters copied once; a storefront order asks the sale view
// before its command is boxed for the actor, and binds into a pooled
// command; a poll the view answers is noted on the entry's record in the
// view, not in a locked map.
// An answer made of slices kept already (PiecesAppender: the change
// feed's pages, each change rendered once for every follower) is written,
// when large, as those slices straight to the connection (writev), never
// copied into a body buffer (respstream.go).
//
// # Bounds
//
// Body size (1 MiB), JSON nesting (64), detail count per answer (50),
// Idempotency-Key length (255), tracked rate budgets and failure buckets
// (RateLimitMaxKeys each, by forgetting, never by refusing a newcomer),
// stored idempotent answers (IdempotencyMaxEntries and
// 256 MiB of bodies), Request-Id length (128).
package http
