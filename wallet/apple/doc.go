// Package apple builds Apple Wallet passes (.pkpass) of a buyer's ticket
// and speaks Apple's side of their updates (decisions §21).
//
// # Format
//
// A .pkpass is a zip of pass.json (an eventTicket pass: the event's name,
// date in the event's time zone, venue and the attendee; the check-in
// code as a QR barcode; webServiceURL and authenticationToken), icon.png
// and icon@2x.png (drawn here: Wallet refuses a pass without an icon),
// manifest.json (the SHA-1 of every other file, hex) and signature: a
// detached PKCS#7 (CMS) signature of manifest.json by the pass type
// certificate, carrying Apple's WWDR intermediate certificate, with a
// signing time (github.com/smallstep/pkcs7).
//
// # Updates
//
// A device that adds the pass registers with the pass web service (the
// paths of Apple's PassKit Web Service reference under webServiceURL:
// POST/DELETE v1/devices/{device}/registrations/{passType}/{serial},
// GET v1/devices/{device}/registrations/{passType}?passesUpdatedSince=,
// GET v1/passes/{passType}/{serial}, POST v1/log), each call bearing
// "Authorization: ApplePass <authenticationToken>". When the pass changes,
// the service sends an empty push through APNs to each registered
// device's push token, topic = the pass type identifier, authenticated by
// the same pass type certificate (Pusher; APNs is the real HTTP/2
// client); the device then lists what changed and fetches it.
// AuthToken derives a pass's token from a secret and its serial, so no
// token is stored.
//
// # Configuration
//
// Load reads the PEM files and refuses, at start, what cannot sign a pass
// Wallet accepts: a missing or unreadable file, a key that is not the
// certificate's, a certificate expired or not yet valid, a pass
// certificate the WWDR certificate did not issue, or one issued for
// another pass type identifier.
//
// The package imports nothing of the service's shell (no actors, no
// http). A Signer is read-only after Load and safe for concurrent use.
package apple
