// Package index is the event index of package actors: which business
// unit owns each event, and which events are published, for the
// storefront's listing.
//
// # Key schema and byte format
//
//	"ev/" + event id     -> the unit id (bytes)
//	"evpub/" + event id  -> one byte: '1' published, '0' not published
//
// An event's "ev/" entry is written in the batch of its creation, its
// "evpub/" entry in the batch of a change that moves its status (and
// again by an activation that finds the index differing). Load rebuilds
// the index from them at start. An event without an "evpub/" entry (its
// actor has not run since the entry was introduced) is unknown and stays
// a candidate (the listing asks it); a known draft costs a listing
// nothing. In cluster mode the same entries come from a replicated index
// (actors.SharedIndex, System.IndexChanged).
//
// # Concurrency
//
// An Index is safe for concurrent use; Load is called before it is shared.
package index
