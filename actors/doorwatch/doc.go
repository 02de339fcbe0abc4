// Package doorwatch is a node's memory of the door's watchers: the pulses
// that wake an event's door streams once its change is durable, when each
// door device was last seen, and each event's latest pass stamp (so a
// caught-up device is answered without asking the event's actor).
//
// Nothing here is in the log: a restart forgets it and use rebuilds it.
// Concurrency: every method is safe from any goroutine (sync.Map and
// atomics); the event actors call Waker and NotePassVer from their commit
// path, the door routes (through ops) the rest.
package doorwatch
