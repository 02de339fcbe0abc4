package devlog

import (
	"net/netip"
	"strconv"
	"sync"
	"time"

	"ticketd/event"
	thttp "ticketd/http"
)

// Defaults of the developer log.
const (
	DefaultPerUnit   = 5000
	DefaultRetention = 7 * 24 * time.Hour
)

// RequestLogEntry is one request of an API key in the developer log.
type RequestLogEntry struct {
	ID          string     `json:"id"`
	KeyID       string     `json:"keyId"`
	Surface     string     `json:"surface" v:"enum=developer|storefront"`
	Method      string     `json:"method"`
	Route       string     `json:"route" doc:"The route pattern, e.g. /v1/events/{eventId}."`
	Path        string     `json:"path" doc:"The concrete path, without the query string."`
	OperationID string     `json:"operationId"`
	Status      int        `json:"status"`
	LatencyMS   float64    `json:"latencyMs"`
	ClientIP    string     `json:"clientIp"`
	RequestID   string     `json:"requestId"`
	CreatedAt   event.Time `json:"createdAt"`
}

// Log is the developer log: every request of an API key (Developer and
// Storefront surfaces), per business unit, in memory. It is a bounded ring
// per unit (perUnit entries, the oldest overwritten) and entries older than
// the retention are not listed. It is deliberately not persisted: the
// flash-sale hot path records every request, and one mutex-guarded slot
// write is all that costs; the audit log is the durable record of changes.
// Safe for concurrent use.
type Log struct {
	perUnit   int
	retention time.Duration

	mu    sync.Mutex
	units map[string]*devRing

	// paths carries a request's concrete path from its handler (which
	// sees the request) to thttp.Config.OnRequest (which sees the status and
	// latency), keyed by request id; an entry lives for one request.
	paths sync.Map
}

type devRing struct {
	seq     uint64 // entries ever recorded; entry i has ID seq
	entries []devEntry
}

// devEntry is a RequestLogEntry as the ring keeps it: the request's values,
// turned into the wire form (ids, client ip, latency in ms, time) only
// when listed, so recording a request formats nothing. It is kept small:
// a drop writes one per request into a ring too big for the caches, and
// each line it spans is a miss.
type devEntry struct {
	seq                               uint64
	keyID, method, route, operationID string
	// The request's id as the server took it: the client's, or the
	// number the server formats with its prefix (thttp.RequestInfo).
	requestID, requestPrefix string
	requestSeq               uint64
	// path is the concrete path, in a buffer the ring's slot keeps and
	// reuses (thttp.RequestInfo.URLPath is valid during the call only).
	path    []byte
	at      int64 // unix nanos
	latency time.Duration
	ip      netip.Addr
	status  int32
	surface thttp.Surface
}

func (e *devEntry) view() RequestLogEntry {
	v := RequestLogEntry{
		ID: "rl_" + strconv.FormatUint(e.seq, 10), KeyID: e.keyID, Surface: surfaceName(e.surface), Method: e.method,
		Route: e.route, Path: string(e.path), OperationID: e.operationID, Status: int(e.status),
		LatencyMS: float64(e.latency.Microseconds()) / 1000, RequestID: e.requestID, CreatedAt: event.At(time.Unix(0, e.at).UTC()),
	}
	if v.RequestID == "" && e.requestSeq != 0 {
		v.RequestID = thttp.FormatRequestID(e.requestPrefix, e.requestSeq)
	}
	if e.ip.IsValid() {
		v.ClientIP = e.ip.String()
	}
	return v
}

// New returns a developer log keeping perUnit entries per unit for
// retention (defaults for values <= 0).
func New(perUnit int, retention time.Duration) *Log {
	if perUnit <= 0 {
		perUnit = DefaultPerUnit
	}
	if retention <= 0 {
		retention = DefaultRetention
	}
	return &Log{perUnit: perUnit, retention: retention, units: map[string]*devRing{}}
}

// notePath remembers the concrete path of the request requestID, for a
// caller that has no Ctx; the server's requests carry theirs in
// thttp.RequestInfo.URLPath instead.
func (d *Log) notePath(requestID string, path []byte) {
	if len(path) > thttp.MaxLoggedPath {
		path = path[:thttp.MaxLoggedPath]
	}
	d.paths.Store(requestID, string(path))
}

// record adds a finished request of an API key.
func (d *Log) record(info thttp.RequestInfo) {
	if info.KeyID == "" || info.UnitID == "" || (info.Surface != thttp.Developer && info.Surface != thttp.Storefront) {
		return
	}
	path := info.URLPath
	if path == "" {
		path = info.Path
		if p, ok := d.paths.LoadAndDelete(info.ID()); ok {
			path = p.(string)
		}
	}
	e := devEntry{
		keyID: info.KeyID, surface: info.Surface, method: info.Method, route: info.Path,
		operationID: info.OperationID, status: int32(info.Status), latency: info.Latency,
		requestID: info.RequestID, requestPrefix: info.RequestPrefix, requestSeq: info.RequestSeq,
		ip: info.ClientIP, at: info.Time.UnixNano(),
	}
	d.mu.Lock()
	r := d.units[info.UnitID]
	if r == nil {
		r = &devRing{}
		d.units[info.UnitID] = r
	}
	r.seq++
	e.seq = r.seq
	var slot *devEntry
	if len(r.entries) < d.perUnit {
		r.grow(d.perUnit)
		r.entries = r.entries[:len(r.entries)+1]
		slot = &r.entries[len(r.entries)-1]
	} else {
		slot = &r.entries[(r.seq-1)%uint64(d.perUnit)]
	}
	// The path is copied into the slot's own buffer, reused once the
	// ring has come round (a path's bytes are the request's).
	e.path = append(slot.path[:0], path...)
	*slot = e
	d.mu.Unlock()
}

// pathBlock is the bytes of path buffer a slot starts with: a drop's
// paths fit, and the slots' buffers are cut from one block per chunk of
// slots, so consecutive entries write consecutive memory.
const pathBlock = 128

// grow makes room for one more entry, up to perUnit: the ring grows in
// chunks, each slot given a buffer of pathBlock bytes from the chunk's
// block (a longer path gets its own).
func (r *devRing) grow(perUnit int) {
	n := len(r.entries)
	if n < cap(r.entries) {
		return
	}
	c := min(perUnit, max(64, 2*n))
	entries := make([]devEntry, n, c)
	copy(entries, r.entries)
	block := make([]byte, (c-n)*pathBlock)
	for i := n; i < c; i++ {
		entries[:c][i].path = block[(i-n)*pathBlock : (i-n)*pathBlock : (i-n+1)*pathBlock]
	}
	r.entries = entries
}

func surfaceName(s thttp.Surface) string {
	if s == thttp.Storefront {
		return "storefront"
	}
	return "developer"
}

// Filter selects developer log entries; zero fields match all.
type Filter struct {
	KeyID  string
	Status int
	Method string
	Since  time.Time
	Until  time.Time
}

// List returns a unit's entries newest first that match f, after the entry
// with sequence number before (0: from the newest), at most limit. more
// reports further matches.
func (d *Log) List(unitID string, f Filter, before uint64, limit int, now time.Time) ([]RequestLogEntry, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := []RequestLogEntry{}
	r := d.units[unitID]
	if r == nil {
		return out, false
	}
	oldest := now.Add(-d.retention)
	n := uint64(len(r.entries))
	for s := r.seq; s > r.seq-n; s-- {
		if before != 0 && s >= before {
			continue
		}
		e := &r.entries[(s-1)%uint64(d.perUnit)]
		at := event.At(time.Unix(0, e.at).UTC()).Time // as the wire form compares
		if at.Before(oldest) {
			break // older entries are older still
		}
		if f.KeyID != "" && e.keyID != f.KeyID || f.Status != 0 && int(e.status) != f.Status ||
			f.Method != "" && e.method != f.Method ||
			!f.Since.IsZero() && at.Before(f.Since) || !f.Until.IsZero() && !at.Before(f.Until) {
			continue
		}
		if len(out) == limit {
			return out, true
		}
		out = append(out, e.view())
	}
	return out, false
}

// Register feeds d from srv's Config.OnRequest, chained after any hook
// already set (like thttp.RegisterMetrics). It must be called before
// Serve.
func Register(srv *thttp.Server, d *Log) {
	srv.OnRequest(d.record)
}
