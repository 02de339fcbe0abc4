// Package ask is what the callers of the shell and the parts that answer
// them share: the errors an ask of an event's actor answers besides the
// core's rejections (ErrBusy, ErrUnavailable, Replayed), and the
// Idempotency-Key record a write carries to its commit (Recorder). The
// local actors (package actors) answer them, the cluster's forwarding
// (cluster/routing) answers them for an owner on another node, and the
// front doors map them to answers. It sits below all of them, so none
// imports another for these.
//
// # Concurrency
//
// The package has no state. A Recorder's functions are called on the
// event actor's goroutine (see Recorder).
package ask
