// Package directory is the pure state machine of the service-wide directory:
// business units, their API keys, and the console's members (members.go):
// people with an email, an argon2id password hash and a role per unit
// (owner, admin, door, viewer), and their one-time invitation and password
// reset links, of which only a SHA-256 hash of the token is kept; and door
// devices (devices.go): one event's doors, a one-time setup code and a
// device key "dk_...", both kept as SHA-256 hashes only. Like event it does no I/O and
// reads no clock: commands carry their time and every generated secret, and
// the changes it emits are what the log stores (stream "directory").
//
// Only a SHA-256 hash of a secret key is ever stored; publishable keys are
// public and kept whole, as the console shows them in full.
//
// Lookups a request makes are map reads, whatever the number of keys: a
// token by its hash (secret) or itself (publishable), and a CORS origin by
// an index of the origins of unrevoked publishable keys with the latest
// expiry among them (OriginListed), kept by Apply and copied by Clone.
//
// Change encoding (the log record): one version byte (1), then the JSON of
// a record {"k": kind, "c": change}. Decoding bad bytes returns an error.
// Snapshot encoding (the whole state, cluster mode's checkpoints): one
// version byte (1), then the JSON of its units, keys, members and links.
//
// Concurrency: a State is owned by one goroutine (the directory actor); the
// actor publishes read views for concurrent readers.
package directory
