// Package api is the endpoint handlers of ticketd's three surfaces
// (Developer /v1, Storefront /storefront/v1, Admin /admin/v1) and the
// HTTP faces of the sandbox payment provider. New builds the route table,
// hands it to the http pipeline (http.NewServer), wraps audited writes
// with the audit-log middleware (audit_wrap.go), and registers what is not
// an API operation: the metrics, the developer log, the OpenAPI documents
// (http/openapi), the hosted pages (http/pages) and the payment webhook
// and page.
//
// Handlers are thin: the pipeline has authenticated and limited the
// request; a handler binds the body or query, routes one command to the
// event's actor by id (errors of the actor shell become 503), and returns
// the result for the pipeline to encode. The refund workflow is
// payments.Refunds; the handler only starts it and maps its answer.
// Another business unit's event answers exactly like a missing one.
//
// # Concurrency
//
// The handlers run on fasthttp's request goroutines and share only the
// actor system, the webhook service, the developer and audit logs and the
// payment sandbox, each safe for concurrent use. New is called once,
// before Serve.
package api
