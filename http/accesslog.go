package http

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/netip"
	"strconv"
	"time"
	"unsafe"

	"github.com/valyala/fasthttp"
)

// RequestInfo describes one finished request, for Config.OnRequest (the
// per-key developer log, metrics).
type RequestInfo struct {
	Time        time.Time // arrival, from Config.Now
	Method      string
	Path        string // the route pattern; the raw path (cut) for unrouted requests
	OperationID string // "" outside the route table
	Surface     Surface
	Status      int
	Latency     time.Duration
	KeyID       string
	UnitID      string
	ClientIP    netip.Addr
	// RequestID is the client's Request-Id when it sent a sane one; else
	// it is empty and the server generated the id from RequestPrefix and
	// RequestSeq: ID formats either, so a request no hook asks the id of
	// builds none.
	RequestID     string
	RequestSeq    uint64
	RequestPrefix string
	// URLPath is the concrete path (cut at 512 bytes) of a Developer or
	// Storefront request whose handler ran, for the developer log; ""
	// otherwise. It may share the request's buffer: valid during the
	// call only, so a hook that keeps it copies it.
	URLPath string
	// conn is the connection's id (fasthttp's ConnID): the stripe of the
	// metrics' series the request adds to.
	conn uint64
}

// ID returns the request's id, as the Request-Id header carried it.
func (i *RequestInfo) ID() string {
	if i.RequestID != "" || i.RequestSeq == 0 {
		return i.RequestID
	}
	return FormatRequestID(i.RequestPrefix, i.RequestSeq)
}

// FormatRequestID is the id a server with prefix generated as number seq
// (RequestInfo.RequestPrefix, RequestSeq).
func FormatRequestID(prefix string, seq uint64) string {
	return string(appendRequestID(make([]byte, 0, 32), prefix, seq))
}

// requestStart is what begin hands to finish.
type requestStart struct {
	at   time.Time // Config.Now, for handlers
	mono time.Time // time.Now, for latency
	// clientID is the client's sane Request-Id, else seq numbers the id
	// the server generates (formatted only when read: requestStart.id).
	clientID string
	seq      uint64
	ip       netip.Addr
}

// id returns the request's id.
func (st *requestStart) id(s *Server) string {
	if st.clientID != "" {
		return st.clientID
	}
	return FormatRequestID(s.reqPrefix, st.seq)
}

// appendRequestID appends a generated request id: the server's prefix and
// a counter in base 36.
func appendRequestID(b []byte, prefix string, seq uint64) []byte {
	b = append(b, prefix...)
	b = append(b, '_')
	return strconv.AppendUint(b, seq, 36)
}

const maxRequestIDLen = 128

// newRequestIDPrefix returns the random per-server prefix of generated ids;
// a counter makes them unique without a crypto read per request.
func newRequestIDPrefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "req_" + hex.EncodeToString(b[:])
}

// requestID takes the client's Request-Id when it is sane, else numbers
// a new one, and echoes it in the response: a generated id is written
// from a stack buffer, never made a string unless something reads it.
func (s *Server) requestID(rc *fasthttp.RequestCtx, st *requestStart) {
	h := &rc.Response.Header
	if in, _ := PeekHeader(&rc.Request.Header, "Request-Id"); len(in) > 0 && len(in) <= maxRequestIDLen && saneID(in) {
		st.clientID = string(in)
		setCanonical(h, hdrRequestID, st.clientID)
		return
	}
	st.seq = s.nextSeq()
	var buf [48]byte
	h.SetCanonical(hdrRequestIDBytes, appendRequestID(buf[:0], s.reqPrefix, st.seq))
}

// idBlock is a run of request numbers, [next, end), that one processor
// hands out without touching the server's counter.
type idBlock struct{ next, end uint64 }

// idBlockSize is how many numbers a processor takes from the counter at
// a time.
const idBlockSize = 256

// nextSeq numbers a generated request id: unique on this server (as the
// counter was), though no longer in arrival order across processors. The
// numbers come from a block of the processor's own (sync.Pool keeps one
// per processor), so the shared counter is added to once in idBlockSize
// requests rather than by every request from both cores in turn; a
// block the pool drops at a collection leaves a gap, never a repeat.
func (s *Server) nextSeq() uint64 {
	b, _ := s.idBlocks.Get().(*idBlock)
	if b == nil {
		b = new(idBlock)
	}
	if b.next == b.end {
		end := s.reqSeq.Add(idBlockSize)
		b.next, b.end = end-idBlockSize+1, end+1
	}
	n := b.next
	b.next++
	s.idBlocks.Put(b)
	return n
}

func saneID(b []byte) bool {
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// begin stamps what every response carries: the request id and the
// security headers.
// fasthttp reads the clock as it calls the handler (RequestCtx.Time), so
// a routed request takes its time from there: one reading less per
// request. (A context built without a connection, in tests, has none.)
func (s *Server) begin(rc *fasthttp.RequestCtx) requestStart {
	t := rc.Time()
	if t.IsZero() {
		t = time.Now()
	}
	return s.beginAt(rc, t)
}

// beginAt is begin for a request that arrived at t (time.Now's reading).
func (s *Server) beginAt(rc *fasthttp.RequestCtx, t time.Time) requestStart {
	st := requestStart{mono: t}
	s.requestID(rc, &st)
	if st.at = st.mono; !s.clock {
		st.at = s.cfg.Now()
	}
	st.ip = ClientIP(rc, s.cfg.TrustedProxies)
	setCanonical(&rc.Response.Header, hdrContentTypeOptions, "nosniff")
	return st
}

// Canonical forms (as fasthttp normalizes them) of the response headers
// every request sets, for setCanonical.
const (
	hdrRequestID          = "Request-Id"
	hdrContentTypeOptions = "X-Content-Type-Options"
	hdrVersion            = "Service-Version" // versionHeader, normalized
	hdrVary               = "Vary"
	hdrCacheControl       = "Cache-Control"
)

var hdrRequestIDBytes = []byte(hdrRequestID)

// setCanonical sets a response header whose key is already in canonical
// form, skipping the key copy and normalization of Header.Set: a table
// route sets half a dozen headers per request. fasthttp only reads key and
// value (it copies both), so viewing the strings as bytes is safe.
func setCanonical(h *fasthttp.ResponseHeader, key, value string) {
	h.SetCanonical(unsafe.Slice(unsafe.StringData(key), len(key)), unsafe.Slice(unsafe.StringData(value), len(value)))
}

// finish writes the access log line and calls Config.OnRequest.
func (s *Server) finish(rc *fasthttp.RequestCtx, st requestStart, r *Route, p *Principal, notedPath bool) {
	info := RequestInfo{
		Time:          st.at,
		Status:        rc.Response.StatusCode(),
		Latency:       time.Since(st.mono),
		ClientIP:      st.ip,
		RequestID:     st.clientID,
		RequestSeq:    st.seq,
		RequestPrefix: s.reqPrefix,
		conn:          rc.ConnID(),
	}
	if r != nil {
		info.Method, info.Path, info.OperationID, info.Surface = r.Method, r.Path, r.OperationID, r.Surface
	} else {
		info.Method = string(rc.Method())
		path := rc.Request.URI().PathOriginal()
		if len(path) > 256 {
			path = path[:256]
		}
		info.Path = LogPath(rc, path)
		info.Surface = Public
	}
	if p != nil {
		info.KeyID, info.UnitID = p.KeyID, p.UnitID
	}
	if notedPath {
		info.URLPath = logPathView(rc, truncate(rc.Path(), MaxLoggedPath))
	}
	if s.log.Enabled(context.Background(), slog.LevelInfo) {
		s.log.LogAttrs(context.Background(), slog.LevelInfo, "request",
			slog.String("method", info.Method),
			slog.String("path", info.Path),
			slog.Int("status", info.Status),
			slog.Float64("latency_ms", float64(info.Latency.Microseconds())/1000),
			slog.String("key_id", info.KeyID),
			slog.String("client_ip", info.ClientIP.String()),
			slog.String("request_id", info.ID()),
		)
	}
	if s.cfg.OnRequest != nil {
		s.cfg.OnRequest(info)
	}
}

// passPrefix starts the hosted pass page's path, whose last segment is the
// pass token: whoever holds it holds the ticket.
const passPrefix = "/pass/"

// logPathView is LogPath without a copy when the path is kept as it is:
// the string shares raw's bytes, valid until the request ends.
func logPathView(rc *fasthttp.RequestCtx, raw []byte) string {
	if !hasPrefix(rc.Request.URI().Path(), passPrefix) {
		return unsafe.String(unsafe.SliceData(raw), len(raw))
	}
	return LogPath(rc, raw)
}

// LogPath returns a request path for the logs. A pass page's path (as the
// router decodes it, so no escaped spelling slips by) keeps its event id
// and loses the token's secret part: "/pass/evt_1.[redacted]". Any other
// path is raw, as received.
func LogPath(rc *fasthttp.RequestCtx, raw []byte) string {
	decoded := rc.Request.URI().Path()
	if !hasPrefix(decoded, passPrefix) {
		return string(raw)
	}
	rest := decoded[len(passPrefix):]
	if i := bytes.IndexByte(rest, '.'); i > 0 && i <= 64 && bytes.IndexByte(rest[:i], '/') < 0 {
		return passPrefix + string(rest[:i+1]) + "[redacted]"
	}
	return passPrefix + "[redacted]"
}

// OnRequest adds f to Config.OnRequest, called before the hook already
// set (RegisterMetrics chains its own the same way; http/devlog feeds the
// developer log through it). It must be called before Serve.
func (s *Server) OnRequest(f func(RequestInfo)) {
	prev := s.cfg.OnRequest
	s.cfg.OnRequest = func(info RequestInfo) {
		f(info)
		if prev != nil {
			prev(info)
		}
	}
}

// MaxLoggedPath bounds the concrete request path the developer log
// (RequestInfo.URLPath) and the audit log keep.
const MaxLoggedPath = 512
