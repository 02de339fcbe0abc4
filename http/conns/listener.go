package conns

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// Connection bounds when the server's configuration leaves them zero.
const (
	// DefaultMaxPerIP leaves room for a NAT of many visitors (a
	// browser opens about six connections; an office or a carrier NAT puts
	// hundreds of them behind one address) while one address cannot hold
	// the whole server by default. Idle connections need no per-address
	// bound: at the total bound the longest idle one is reclaimed.
	DefaultMaxPerIP = 1024
	// maxConnsCeiling and maxConnsFloor bound the total derived from the
	// file descriptor limit.
	maxConnsCeiling = 10_000
	maxConnsFloor   = 64
)

// Accept retry delays after an error such as EMFILE: short at first (a
// connection closing frees a descriptor at once), at most a second so a
// freed descriptor is used promptly.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// refusers bounds the goroutines answering refused connections; beyond it a
// refused connection is closed without an answer, so that refusing costs
// neither unbounded goroutines nor descriptors.
const refusers = 32

// DefaultMax is the total connection bound for the process's file
// descriptor limit: half of RLIMIT_NOFILE, the rest being left to the store
// (Pebble keeps its tables open), the outbox's SMTP and webhook
// connections and the process itself; within 64 to 10,000.
func DefaultMax() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 1024
	}
	n := rl.Cur / 2
	if rl.Cur == ^uint64(0) || n > maxConnsCeiling {
		return maxConnsCeiling
	}
	return max(int(n), maxConnsFloor)
}

// Listener is the listener fasthttp serves on. It exists for three
// reasons fasthttp's own Serve does not cover:
//
//   - fasthttp ends Serve on any accept error that is not a timeout, and
//     running out of file descriptors (EMFILE, ENFILE) is such an error: an
//     idle-connection flood would end the process. Here every accept error
//     but a closed listener is retried with a backoff, and running out of
//     descriptors also reclaims an idle connection to free one.
//   - It bounds connections in total and per client address (IPv6 per /64;
//     trusted proxies are exempt, their clients are counted by the rate
//     limits instead). fasthttp's MaxConnsPerIP counts IPv4 only, and its
//     Concurrency answers 503 to the newcomer however idle the others are.
//   - At the total bound an idle connection (between requests, or
//     connected and silent) is reclaimed for the newcomer: the longest idle
//     of the address holding the most connections, so idle connections
//     cannot lock active clients out until their timeouts, and a flood from
//     one address spends its own connections first.
//
// Every method is safe for concurrent use. The per-request cost is two
// atomic stores (busy in Read, idle in the ConnState hook).
type Listener struct {
	net.Listener
	max, maxPerIP int
	exempt        []netip.Prefix
	log           *slog.Logger
	refuse429     []byte // canned answers to refused connections
	refuse503     []byte
	refusing      chan struct{} // semaphore of refusers

	mu         sync.Mutex
	conns      map[*trackedConn]struct{}
	perIP      map[netip.Addr]int
	reclaiming int // reclaimed connections not yet closed

	// Stats counts what the listener did, for /metrics.
	Stats Stats
	// lastLog rate-limits the warnings of each kind (unix nanos).
	lastLog [3]atomic.Int64
}

// Stats are the listener's counters since it was made.
type Stats struct {
	Accepted, RefusedPerIP, RefusedTotal, Reclaimed, AcceptErrors atomic.Int64
}

// Config is what New needs.
type Config struct {
	// Max bounds open connections in total, MaxPerIP per client address
	// (IPKey); 0 is no bound.
	Max, MaxPerIP int
	// Exempt are the addresses MaxPerIP does not count (trusted proxies:
	// the rate limits count their clients instead).
	Exempt []netip.Prefix
	Log    *slog.Logger
	// Refuse429 and Refuse503 are the whole HTTP answers written to a
	// connection refused at MaxPerIP and at Max (the caller's error
	// envelope: this package knows no response format).
	Refuse429, Refuse503 []byte
}

const (
	logAcceptError = iota
	logPerIP
	logTotal
)

// New wraps ln in the bounds of cfg.
func New(ln net.Listener, cfg Config) *Listener {
	return &Listener{
		Listener: ln, max: cfg.Max, maxPerIP: cfg.MaxPerIP, exempt: cfg.Exempt, log: cfg.Log,
		refuse429: cfg.Refuse429,
		refuse503: cfg.Refuse503,
		refusing:  make(chan struct{}, refusers),
		conns:     map[*trackedConn]struct{}{},
		perIP:     map[netip.Addr]int{},
	}
}

// Accept returns the next admitted connection. It returns an error only
// when the listener is closed.
func (l *Listener) Accept() (net.Conn, error) {
	var delay time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil, err
			}
			l.Stats.AcceptErrors.Add(1)
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM) {
				l.mu.Lock()
				l.reclaimLocked()
				l.mu.Unlock()
			}
			delay = min(max(2*delay, acceptBackoffMin), acceptBackoffMax)
			l.warn(logAcceptError, "http: accept failed; retrying", "err", err, "retry_in", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		if tc := l.admit(c); tc != nil {
			return tc, nil
		}
	}
}

// admit tracks c, or refuses it (and returns nil) when its address or the
// server is at its bound and no idle connection can be reclaimed.
func (l *Listener) admit(c net.Conn) *trackedConn {
	peer := peerAddr(c)
	ip := IPKey(peer)
	exempt := Trusted(peer, l.exempt)
	now := time.Now()
	l.mu.Lock()
	if l.maxPerIP > 0 && !exempt && l.perIP[ip] >= l.maxPerIP {
		l.mu.Unlock()
		l.Stats.RefusedPerIP.Add(1)
		l.warn(logPerIP, "http: connection refused: too many from one address", "client_ip", ip.String(), "max_conns_per_ip", l.maxPerIP)
		l.refuse(c, l.refuse429)
		return nil
	}
	if l.max > 0 && len(l.conns)-l.reclaiming >= l.max && !l.reclaimLocked() {
		l.mu.Unlock()
		l.Stats.RefusedTotal.Add(1)
		l.warn(logTotal, "http: connection refused: every connection is busy", "max_conns", l.max)
		l.refuse(c, l.refuse503)
		return nil
	}
	tc := &trackedConn{Conn: c, l: l, peer: peer, ip: ip, counted: !exempt}
	tc.idleSince.Store(now.UnixNano())
	l.conns[tc] = struct{}{}
	if tc.counted {
		l.perIP[ip]++
	}
	l.mu.Unlock()
	l.Stats.Accepted.Add(1)
	return tc
}

// reclaimLocked ends an idle connection of the client address holding the
// most connections, the one of them idle the longest, if any: a flood from
// one address gives up its own idle connections before an ordinary
// client's kept-alive one is touched. It expires the victim's read
// deadline, so fasthttp's goroutine wakes from its read and closes it as
// after an idle timeout. The caller holds l.mu. The scan is linear, but it
// runs only at the bound or out of descriptors, never per request.
func (l *Listener) reclaimLocked() bool {
	var victim *trackedConn
	var oldest int64
	most := -1
	for c := range l.conns {
		if c.busy.Load() || c.reclaimed.Load() {
			continue
		}
		n := l.perIP[c.ip]
		at := c.idleSince.Load()
		if victim == nil || n > most || (n == most && at < oldest) {
			victim, oldest, most = c, at, n
		}
	}
	if victim == nil {
		return false
	}
	victim.reclaimed.Store(true)
	l.reclaiming++
	l.Stats.Reclaimed.Add(1)
	_ = victim.Conn.SetReadDeadline(pastDeadline)
	return true
}

// ReclaimAllIdle ends every connection without a request in flight, for
// the server's Shutdown.
func (l *Listener) ReclaimAllIdle() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		if !c.busy.Load() && !c.reclaimed.Load() {
			c.reclaimed.Store(true)
			l.reclaiming++
			_ = c.Conn.SetReadDeadline(pastDeadline)
		}
	}
}

// pastDeadline is a read deadline that has already passed.
var pastDeadline = time.Unix(1, 0)

// refuse answers c with a canned error and closes it, off the accept loop.
// The client's request is drained briefly first: closing a socket with
// unread input sends a reset, and the client would lose the answer.
func (l *Listener) refuse(c net.Conn, answer []byte) {
	select {
	case l.refusing <- struct{}{}:
	default:
		_ = c.Close()
		return
	}
	go func() {
		defer func() { <-l.refusing }()
		_ = c.SetDeadline(time.Now().Add(200 * time.Millisecond))
		_, _ = c.Write(answer)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		var buf [1024]byte
		for i := 0; i < 16; i++ {
			if _, err := c.Read(buf[:]); err != nil {
				break
			}
		}
		_ = c.Close()
	}()
}

// release forgets a closed connection.
func (l *Listener) release(c *trackedConn) {
	l.mu.Lock()
	delete(l.conns, c)
	if c.counted {
		if n := l.perIP[c.ip] - 1; n > 0 {
			l.perIP[c.ip] = n
		} else {
			delete(l.perIP, c.ip)
		}
	}
	if c.reclaimed.Load() {
		l.reclaiming--
	}
	l.mu.Unlock()
}

// Open returns the connections being served.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// Busy returns the connections with a request in flight.
func (l *Listener) Busy() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for c := range l.conns {
		if c.busy.Load() {
			n++
		}
	}
	return n
}

// warn logs at most once per 10 seconds per kind: a flood must not turn
// into a log flood.
func (l *Listener) warn(kind int, msg string, args ...any) {
	now := time.Now().UnixNano()
	last := l.lastLog[kind].Load()
	if now-last < int64(10*time.Second) || !l.lastLog[kind].CompareAndSwap(last, now) {
		return
	}
	l.log.Warn(msg, args...)
}

// State is fasthttp's ConnState hook of a server on a Listener: it keeps
// each connection's idle mark for reclaiming.
func State(c net.Conn, st fasthttp.ConnState) {
	tc, ok := c.(*trackedConn)
	if !ok {
		return
	}
	switch st {
	case fasthttp.StateIdle:
		tc.served.Store(true)
		tc.idleSince.Store(time.Now().UnixNano())
		tc.busy.Store(false)
	case fasthttp.StateActive:
		// fasthttp says active before the first request's first byte, but
		// on a kept-alive connection only once the next request's bytes
		// are there (or already buffered, when pipelined).
		if tc.served.Load() {
			tc.busy.Store(true)
		}
	}
}

// TCP is the TCP connection under c, a connection of a Listener (its
// tracking taken off: it counts reads only, so a write straight to the
// TCP connection, e.g. a writev of a large answer's pieces, is as one
// through it), or c itself when it is a TCP connection; nil otherwise.
func TCP(c net.Conn) *net.TCPConn {
	if tc, ok := c.(*trackedConn); ok {
		c = tc.Conn
	}
	t, _ := c.(*net.TCPConn)
	return t
}

// trackedConn is a connection the listener counts. It is busy from the
// first byte of a request until fasthttp has answered it.
type trackedConn struct {
	net.Conn
	l         *Listener
	peer      netip.Addr // the client's address (peerAddr)
	ip        netip.Addr // its key (IPKey)
	counted   bool       // counts against its address's bound
	busy      atomic.Bool
	served    atomic.Bool  // has answered a request
	idleSince atomic.Int64 // unix nanos
	reclaimed atomic.Bool
	once      sync.Once
	rd, wd    lazyDeadline
}

func (c *trackedConn) Read(p []byte) (int, error) {
	c.armRead()
	n, err := c.Conn.Read(p)
	if n > 0 && !c.busy.Load() {
		c.busy.Store(true)
	}
	return n, err
}

func (c *trackedConn) Write(p []byte) (int, error) {
	c.armWrite()
	return c.Conn.Write(p)
}

// SetReadDeadline records the deadline for the next Read, which arms it
// (see lazyDeadline). A reclaimed connection's deadline stays in the
// past, whatever fasthttp sets: its goroutine may be about to wait for the
// next request.
func (c *trackedConn) SetReadDeadline(t time.Time) error {
	if c.reclaimed.Load() {
		t = pastDeadline
	}
	c.rd.want(t)
	return nil
}

// SetWriteDeadline records the deadline for the next Write, which arms it.
func (c *trackedConn) SetWriteDeadline(t time.Time) error {
	c.wd.want(t)
	return nil
}

func (c *trackedConn) SetDeadline(t time.Time) error {
	_ = c.SetWriteDeadline(t)
	return c.SetReadDeadline(t)
}

// armRead arms the read deadline asked for, if need be, before a read.
// The check after the arm closes the race with reclaimLocked, which sets
// the connection's deadline itself.
func (c *trackedConn) armRead() {
	if !c.rd.pending {
		return
	}
	c.rd.arm(c.Conn.SetReadDeadline)
	if c.reclaimed.Load() {
		c.rd.armed = pastDeadline
		_ = c.Conn.SetReadDeadline(pastDeadline)
	}
}

func (c *trackedConn) armWrite() {
	if c.wd.pending {
		c.wd.arm(c.Conn.SetWriteDeadline)
	}
}

// lazyDeadline is one direction's deadline, armed on the socket only when
// it matters and only when it moved enough (issue 34: fasthttp sets three
// deadlines a request, idle, read and write, each a clock reading and a
// timer update of the runtime's poller, which a bare server does not pay).
//
//   - A deadline is armed before the next Read (Write), not when it is
//     set: fasthttp sets the read timeout once a request's first bytes
//     are in, and a small request is then whole in its buffer, so the
//     read deadline armed is the idle one, and it is armed before any
//     read that could wait.
//   - A deadline later than the armed one by at most 1/16 of the time
//     left to it keeps the armed one: the connection may be let go that
//     much early (an idle connection after 56.25 s of 60), never late. A
//     keep-alive client's requests ask for the next idle (write) deadline
//     a few milliseconds past the last, so each connection arms about
//     once a second rather than three times a request.
//   - An earlier deadline, or none, is armed as asked: a trickling client
//     still has ReadTimeout from its first byte.
//
// It is used by the connection's one serving goroutine (fasthttp sets
// and reads from the same one), so it needs no lock.
type lazyDeadline struct {
	pending bool
	next    time.Time // asked for
	armed   time.Time // on the socket
}

func (d *lazyDeadline) want(t time.Time) { d.next, d.pending = t, true }

func (d *lazyDeadline) arm(set func(time.Time) error) {
	d.pending = false
	t := d.next
	if !t.IsZero() && !d.armed.IsZero() && !d.armed.After(t) {
		if left := time.Until(t); left > 0 && t.Sub(d.armed) <= left/lazyDeadlineSlack {
			return
		}
	}
	if t.Equal(d.armed) {
		return
	}
	d.armed = t
	_ = set(t)
}

// lazyDeadlineSlack: an armed deadline stands for a later one asked for
// while it is early by at most 1/lazyDeadlineSlack of the time left.
const lazyDeadlineSlack = 16

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c) })
	return err
}

// peerAddr is the connection's remote address.
func peerAddr(c net.Conn) netip.Addr {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		a, _ := netip.AddrFromSlice(ta.IP)
		return a.Unmap()
	}
	return netip.Addr{}
}

// Peer returns the client address of c, a connection of a Listener, as
// it was read once at accept (peerAddr of its RemoteAddr); false for any
// other connection. The server reads a request's client address here
// rather than converting the connection's address again each request.
func Peer(c net.Conn) (netip.Addr, bool) {
	if tc, ok := c.(*trackedConn); ok {
		return tc.peer, true
	}
	return netip.Addr{}, false
}

// IPKey is the address a per-client bound counts (connections here, the
// server's rate budgets): IPv6 clients by their /64, which one subscriber
// usually holds whole.
func IPKey(a netip.Addr) netip.Addr {
	if a.Is6() {
		p, err := a.Prefix(64)
		if err == nil {
			return p.Addr()
		}
	}
	return a
}

// Trusted reports whether a is in one of the prefixes (trusted proxies).
func Trusted(a netip.Addr, trusted []netip.Prefix) bool {
	if !a.IsValid() {
		return false
	}
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
