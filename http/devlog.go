package http

import (
	"strconv"
	"sync"
	"time"

	"ticketd/actors/event"
)

// Defaults of the developer log.
const (
	DefaultDevLogPerUnit   = 5000
	DefaultDevLogRetention = 7 * 24 * time.Hour
	// maxDevLogPath bounds the concrete path kept per entry.
	maxDevLogPath = 512
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

// DevLog is the developer log: every request of an API key (Developer and
// Storefront surfaces), per business unit, in memory. It is a bounded ring
// per unit (perUnit entries, the oldest overwritten) and entries older than
// the retention are not listed. It is deliberately not persisted: the
// flash-sale hot path records every request, and one mutex-guarded slot
// write is all that costs; the audit log is the durable record of changes.
// Safe for concurrent use.
type DevLog struct {
	perUnit   int
	retention time.Duration

	mu    sync.Mutex
	units map[string]*devRing

	// paths carries a request's concrete path from its handler (which
	// sees the request) to Config.OnRequest (which sees the status and
	// latency), keyed by request id; an entry lives for one request.
	paths sync.Map
}

type devRing struct {
	seq     uint64 // entries ever recorded; entry i has ID seq
	entries []RequestLogEntry
}

// NewDevLog returns a developer log keeping perUnit entries per unit for
// retention (defaults for values <= 0).
func NewDevLog(perUnit int, retention time.Duration) *DevLog {
	if perUnit <= 0 {
		perUnit = DefaultDevLogPerUnit
	}
	if retention <= 0 {
		retention = DefaultDevLogRetention
	}
	return &DevLog{perUnit: perUnit, retention: retention, units: map[string]*devRing{}}
}

// notePath remembers the concrete path of the request requestID.
func (d *DevLog) notePath(requestID string, path []byte) {
	if len(path) > maxDevLogPath {
		path = path[:maxDevLogPath]
	}
	d.paths.Store(requestID, string(path))
}

// record adds a finished request of an API key.
func (d *DevLog) record(info RequestInfo) {
	path := info.Path
	if p, ok := d.paths.LoadAndDelete(info.RequestID); ok {
		path = p.(string)
	}
	if info.KeyID == "" || info.UnitID == "" || (info.Surface != Developer && info.Surface != Storefront) {
		return
	}
	e := RequestLogEntry{
		KeyID: info.KeyID, Surface: surfaceName(info.Surface), Method: info.Method, Route: info.Path, Path: path,
		OperationID: info.OperationID, Status: info.Status,
		LatencyMS: float64(info.Latency.Microseconds()) / 1000, RequestID: info.RequestID,
		CreatedAt: event.At(info.Time.UTC()),
	}
	if info.ClientIP.IsValid() {
		e.ClientIP = info.ClientIP.String()
	}
	d.mu.Lock()
	r := d.units[info.UnitID]
	if r == nil {
		r = &devRing{}
		d.units[info.UnitID] = r
	}
	r.seq++
	e.ID = "rl_" + strconv.FormatUint(r.seq, 10)
	if len(r.entries) < d.perUnit {
		r.entries = append(r.entries, e)
	} else {
		r.entries[(r.seq-1)%uint64(d.perUnit)] = e
	}
	d.mu.Unlock()
}

func surfaceName(s Surface) string {
	if s == Storefront {
		return "storefront"
	}
	return "developer"
}

// RequestLogFilter selects developer log entries; zero fields match all.
type RequestLogFilter struct {
	KeyID  string
	Status int
	Method string
	Since  time.Time
	Until  time.Time
}

// List returns a unit's entries newest first that match f, after the entry
// with sequence number before (0: from the newest), at most limit. more
// reports further matches.
func (d *DevLog) List(unitID string, f RequestLogFilter, before uint64, limit int, now time.Time) ([]RequestLogEntry, bool) {
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
		e := r.entries[(s-1)%uint64(d.perUnit)]
		if e.CreatedAt.Before(oldest) {
			break // older entries are older still
		}
		if f.KeyID != "" && e.KeyID != f.KeyID || f.Status != 0 && e.Status != f.Status ||
			f.Method != "" && e.Method != f.Method ||
			!f.Since.IsZero() && e.CreatedAt.Before(f.Since) || !f.Until.IsZero() && !e.CreatedAt.Before(f.Until) {
			continue
		}
		if len(out) == limit {
			return out, true
		}
		out = append(out, e)
	}
	return out, false
}

// registerLogs feeds the developer log from Config.OnRequest, chained
// after any hook already set (like registerMetrics). It must be called
// before Serve.
func registerLogs(srv *Server, d *DevLog) {
	prev := srv.cfg.OnRequest
	srv.cfg.OnRequest = func(info RequestInfo) {
		d.record(info)
		if prev != nil {
			prev(info)
		}
	}
}
