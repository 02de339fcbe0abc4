// Package pages serves the hosted pages: checkout, order, entry pass, the
// continue-checkout page of an open order, a minimal public event page and
// the sandbox payment page's look. Pages are server-rendered html/template
// with one stylesheet and no JavaScript, in English or Chinese
// (Accept-Language or the checkout session's locale), under a strict
// Content-Security-Policy.
//
// Every page that shows personal data sits behind the email gate: the
// buyer types the order's email once per device, and an HMAC-signed cookie
// (Config.Secret; in cluster mode Config.SharedSecret, one key for every
// node) remembers it, one per page (order or pass). The device
// that typed the email at checkout is remembered for its order without
// asking (a session whose email the integrator fixed shows it masked, so
// its order page asks once), and an order page opened there vouches for
// the order's pass (same email).
// Wrong answers are limited per (page, client IP). Forms send the same
// commands as the Storefront API through Config.Ask, so a page accepts
// exactly what the API accepts; their errors come back next to the field,
// in the page's words, with what the buyer typed. Money is written as the
// page's language writes it (loc.Money). Dead ends offer a next step: an
// already registered buyer can have the ticket sent again (bounded per
// session and client IP), a sold-out free admission with a waitlist takes
// the buyer onto it. An unpaid order can be given up on its order page
// (pages_cancel.go: form=cancel, behind the order's gate, through
// ops.CancelOrder, the one cancel every door calls).
//
// The shop (pages_shop.go) is the public event page with Buy buttons, the
// waiting room's queue page (the one page with a script, /hosted/queue.js,
// allowed by its own Content-Security-Policy; a <noscript> meta refresh
// does its job without JavaScript) and /widget.js, the shop embedded on an
// organizer's site through the Storefront API.
//
// The pass page also offers the ticket as a PDF and, when configured,
// as Apple Wallet and Google Wallet passes (pages_wallet.go, package
// wallet), each behind the pass page's gate; Apple's pass web service
// under /pass/apple/v1 authenticates by each pass's own token instead.
//
// # Concurrency
//
// New parses the templates once; a Pages is then read-only and its
// handlers are safe for concurrent use (the gate limiter holds one mutex
// for a few map operations). Register must be called before the server
// serves.
package pages
