// Package smtptest runs a real SMTP relay (github.com/emersion/go-smtp) on
// a loopback port, for tests and fault runs: it accepts mail, or refuses
// it the way real relays do, by recipient: 450 at RCPT for every address
// of a greylisted domain (Postfix's answer for a domain it cannot
// resolve), 550 for a rejected address, or no answer at all (Stall).
//
// # Concurrency
//
// A Relay's methods are safe from any goroutine while it serves; each SMTP
// session runs on its own goroutine.
package smtptest
