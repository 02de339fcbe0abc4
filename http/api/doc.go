// Package api is the endpoint handlers of ticketd's three surfaces
// (Developer /v1, Storefront /storefront/v1, Admin /admin/v1). New builds the route table,
// hands it to the http pipeline (http.NewServer), wraps audited writes
// with the audit-log middleware (http/instrument), and registers what is not
// an API operation: the metrics, the developer log, the OpenAPI documents
// (http/openapi), the hosted pages (http/pages) and the payment provider's
// webhook and page (http/payprovider).
//
// Handlers are thin: the pipeline has authenticated and limited the
// request; a handler binds the body or query, calls the application layer
// (ops.Ops: one command to the event's actor by id, or an operation such
// as CancelOrder; the shell's failures come back mapped), and returns the
// result for the pipeline to encode. The package imports neither the
// actors nor the store, and wires nothing: app.Main builds the layer and
// every service (Deps). The refund workflow is
// payments.Refunds; the handler only starts it and maps its answer.
// Another business unit's event answers exactly like a missing one.
//
// # Concurrency
//
// The handlers run on fasthttp's request goroutines and share only the
// application layer, the webhook service, the developer and audit logs and the
// payment sandbox, each safe for concurrent use. New is called once,
// before Serve.
package api
