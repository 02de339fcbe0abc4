// Package mailbox is how messages reach and leave the actors of package
// actors, where protoactor-go's defaults cost too much on the hot path:
// a Dispatcher that runs mailboxes on long-lived workers (whose grown
// stacks survive one mailbox run), and a ReplyPool of reusable answer
// slots for requests (instead of a future, a registered process and a
// timer goroutine per request).
//
// # Concurrency
//
// A Dispatcher and a ReplyPool are safe for concurrent use. A reply box
// serves one request at a time; one whose caller gave up is dropped, so a
// late answer never reaches the next caller.
package mailbox
