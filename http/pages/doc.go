// Package pages serves the hosted pages: checkout, order, entry pass, the
// continue-checkout page of an open order, a minimal public event page and
// the sandbox payment page's look. Pages are server-rendered html/template
// with one stylesheet and no JavaScript, in English or Chinese
// (Accept-Language or the checkout session's locale), under a strict
// Content-Security-Policy.
//
// Every page that shows personal data sits behind the email gate: the
// buyer types the order's email once per device, and an HMAC-signed cookie
// (Config.Secret) remembers it. Wrong answers are limited per (page,
// client IP). Forms send the same commands as the Storefront API through
// Config.Ask, so a page accepts exactly what the API accepts.
//
// # Concurrency
//
// New parses the templates once; a Pages is then read-only and its
// handlers are safe for concurrent use (the gate limiter holds one mutex
// for a few map operations). Register must be called before the server
// serves.
package pages
