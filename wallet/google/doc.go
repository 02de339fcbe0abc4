// Package google makes Save to Google Wallet links of a buyer's ticket
// and marks saved tickets invalid (decisions §21).
//
// # Format
//
// A Save link is https://pay.google.com/gp/v/save/<jwt>: an RS256 JWT
// signed with the issuer's service account key (header kid = its key id),
// claims iss = the account's email, aud "google", typ "savetowallet",
// origins, and a payload that carries the event ticket class (one per
// event: name, venue, start) and the ticket's object (the check-in code
// as a QR barcode, the holder's name, the ticket type). Google creates
// both when the buyer saves, so nothing is written to the Wallet API
// before anyone asks.
//
// Ids are "<issuerId>.<suffix>", the suffix of letters, digits, ".", "_"
// and "-" (ClassID, ObjectID).
//
// # Updates
//
// Updater marks an object INVALID (a cancelled registration, a rotated
// pass). API is the real client: an OAuth 2.0 access token from the
// service account (JWT bearer grant, scope wallet_object.issuer, kept
// until a minute before it expires), then PATCH
// walletobjects/v1/eventTicketObject/{id} {"state":"INVALID"}. An object
// nobody saved does not exist there (404): nothing to invalidate.
//
// # Configuration
//
// LoadKey reads the service account's JSON key and refuses, at start, a
// file that is missing, not JSON, not a service account key, or whose
// private key does not parse.
//
// The package imports nothing of the service's shell (no actors, no
// http). An Issuer and an API are safe for concurrent use.
package google
