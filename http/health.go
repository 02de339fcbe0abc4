package http

import (
	"github.com/valyala/fasthttp"

	"ticketd/event"
)

// errStorageUnavailable is the answer while writes cannot be made durable
// (see persistence, "Storage faults").
var errStorageUnavailable = &Error{Status: 503, Reason: event.ReasonStorageUnavailable,
	Message: "storage unavailable: writes cannot be made durable; the service restarts to recover, retry shortly"}

// errClusterNotReady is the answer of a cluster node that has not joined
// (or lost) the cluster: it cannot make writes durable yet.
var errClusterNotReady = &Error{Status: 503, Reason: "CLUSTER_NOT_READY",
	Message: "this node has not joined its cluster yet: writes cannot be made durable; retry shortly"}

// Readiness says whether the service can make writes durable: StoreErr
// is the store's fault once it has one, Ready a cluster node's failure to
// have joined its cluster (the application layer, ops.Ops, answers both).
type Readiness interface {
	StoreErr() error
	Ready() error
}

// RegisterHealth serves GET /healthz (200 while the process runs) and GET
// /readyz (200 while writes can be made durable, else 503 in the error
// envelope), both without a key, for probes and load balancers.
func RegisterHealth(srv *Server, sys Readiness) {
	srv.Handle("GET", "/healthz", func(rc *fasthttp.RequestCtx) {
		rc.SetContentType("application/json")
		rc.SetBodyString(`{"status":"ok"}`)
	})
	srv.Handle("GET", "/readyz", func(rc *fasthttp.RequestCtx) {
		rc.Response.Header.Set("Cache-Control", "no-store")
		if sys != nil && sys.StoreErr() != nil {
			srv.WriteError(rc, errStorageUnavailable)
			return
		}
		if sys != nil && sys.Ready() != nil {
			srv.WriteError(rc, errClusterNotReady)
			return
		}
		rc.SetContentType("application/json")
		rc.SetBodyString(`{"status":"ready"}`)
	})
}
