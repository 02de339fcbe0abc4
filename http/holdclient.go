package http

import (
	"crypto/sha256"
	"encoding/base64"
	"net/netip"
)

// HoldClient is the id the event core counts a storefront caller's open
// orders and checkout sessions by (event.PlaceOrder.Client, decisions
// §22): its publishable key and client address, an IPv6 address by its
// /64 (one host's share). It is a digest, so the event log, which keeps
// it with each order, holds no address. Empty for any other caller.
func (c *Ctx) HoldClient() string {
	p := c.Principal()
	if p == nil || p.Type != KeyPublishable {
		return ""
	}
	return HoldClientOf(p.KeyID, c.ClientIP())
}

// HoldClientOf is HoldClient for a key id (or another namespace, e.g. the
// hosted pages') and an address.
func HoldClientOf(keyID string, ip netip.Addr) string {
	if ip.Is6() && !ip.Is4In6() {
		if p, err := ip.Prefix(64); err == nil {
			ip = p.Addr()
		}
	}
	h := sha256.New()
	h.Write([]byte(keyID))
	h.Write([]byte{0})
	b, _ := ip.MarshalBinary()
	h.Write(b)
	var sum [sha256.Size]byte
	return "hc_" + base64.RawURLEncoding.EncodeToString(h.Sum(sum[:0])[:12])
}

// holdLimitRetrySeconds is the Retry-After of a hold limit's 429 (the
// core does not say when the address's next hold ends).
const holdLimitRetrySeconds = 60
