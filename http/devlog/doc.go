// Package devlog is ticketd's developer log: every request of an API key
// (Developer and Storefront surfaces), per business unit, in memory, for
// the console's request log and GET /admin/v1/business-units/{unitId}/request-log.
// Register feeds a Log from the server's per-request hook
// (thttp.Server.OnRequest); List reads it, newest first, with filters and
// a cursor (the entry's sequence number).
//
// It is deliberately not persisted: a flash sale records every request,
// and one mutex-guarded slot write is all that costs (entries are
// formatted when listed, not when recorded, and a request's path is copied
// into its ring slot's own buffer). The audit log is the durable record of
// changes.
//
// # Concurrency
//
// A Log is safe for concurrent use: one mutex guards the rings, held for
// one slot write per request and for a listing's scan of one unit's ring.
//
// # Bounds
//
// PerUnit entries per business unit (DefaultPerUnit, 5,000), the oldest
// overwritten; entries older than the retention (DefaultRetention, 7
// days) are not listed; a path is kept to thttp.MaxLoggedPath bytes.
package devlog
