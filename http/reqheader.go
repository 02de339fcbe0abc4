package http

import "github.com/valyala/fasthttp"

// PeekHeader returns the first value of the request header name and
// whether the header was sent at all (an empty value sent counts), as
// fasthttp's Peek and PeekAll tell together, for less: each of those
// copies the name, scans it for line breaks and normalizes it on every
// call (about 0.1 µs here), and a storefront request reads five or six
// headers (its id, key, origin, version, Idempotency-Key, queue token).
// This walks the headers once comparing names without case (the server
// keeps them normalized, so a match is usually a plain compare).
//
// name must not be a header fasthttp keeps apart from the others (Host,
// Content-Type, Content-Length, User-Agent, Cookie, Connection,
// Transfer-Encoding, Trailer): use its own accessor for those.
func PeekHeader(h *fasthttp.RequestHeader, name string) (value []byte, sent bool) {
	for k, v := range h.All() {
		if len(k) == len(name) && foldEqual(k, name) {
			return v, true
		}
	}
	return nil, false
}

// foldEqual reports whether the ASCII bytes k and s are equal without
// case (same length assumed).
func foldEqual(k []byte, s string) bool {
	for i := range len(s) {
		a, b := k[i], s[i]
		if a == b {
			continue
		}
		if a|0x20 != b|0x20 || a|0x20 < 'a' || a|0x20 > 'z' {
			return false
		}
	}
	return true
}
