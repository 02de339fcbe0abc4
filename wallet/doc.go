// Package wallet ties the buyer's ticket formats to the service: the
// Apple Wallet and Google Wallet credentials (checked at start, New), the
// serial that names one pass for its life, the Apple pass web service's
// state (which device holds which pass, with its push token), and what a
// changed registration owes the wallets (Changed): a push to every
// device holding an Apple pass, and an INVALID state for a saved Google
// object that no longer admits.
//
// The formats live in wallet/apple and wallet/google; this package knows
// nothing of HTTP or actors either: the pass page's handlers call it with
// plain values, and app wires Lookup (a registration as a Ticket, read
// from its event) and the change hook.
//
// # Serials
//
// A pass's serial is "<eventId>.<registrationId>.<tag>", tag the first 8
// hex digits of the SHA-256 of the registration's pass token. Rotating
// the pass (a leaked link) gives a new serial: the old pass is voided
// (Apple) or invalid (Google), and the pass page hands out the new one.
//
// # Key schema (persistence index entries)
//
//	wdev/<device>/<serial>  push token (Apple device registration)
//	wreg/<serial>/<device>  push token (the same, by pass)
//	wgoo/<serial>           "" (a Google Save link was made for the pass)
//
// A device's registrations are bounded by devicePassesMax, a pass's
// devices by passDevicesMax.
//
// # Cluster mode
//
// The device registrations live in the store of the node that took them,
// and the change hook runs on the node that owns the event: a device
// registered through another node is not pushed (it still gets the
// latest pass when Wallet refreshes, which any node answers). Route the
// pass web service (/pass/apple/) to one node, or share the entries
// (as the webhooks' endpoints are) in a later change.
//
// # Concurrency
//
// Service methods are safe for concurrent use. Changed queues its work
// for one goroutine (bounded by changesMax; a change that finds the queue
// full is logged and dropped: a device still gets the pass when it next
// asks Wallet to refresh). Close stops it.
package wallet
