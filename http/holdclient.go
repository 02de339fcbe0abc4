package http

import (
	"crypto/sha256"
	"encoding/base64"
	"hash/maphash"
	"net/netip"
	"sync/atomic"
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
	return c.srv.holdClients.of(p.KeyID, c.ClientIP())
}

// holdClientSlots is the size of the server's cache of hold client ids
// (a power of two): a drop's buyers send several requests each from one
// address, and each would hash its key and address again.
const holdClientSlots = 1 << 14

// holdClientCache remembers the latest hold client ids, one per slot,
// chosen by a hash of (key id, address): a lookup is a hash and a
// compare, and a miss computes HoldClientOf and takes the slot.
// Lock-free: an entry is immutable, slots are swapped whole.
type holdClientCache struct {
	seed  maphash.Seed
	slots [holdClientSlots]atomic.Pointer[holdClientEntry]
}

type holdClientEntry struct {
	keyID string
	ip    netip.Addr
	id    string
}

func newHoldClientCache() *holdClientCache { return &holdClientCache{seed: maphash.MakeSeed()} }

// of is HoldClientOf(keyID, ip), from the cache when it holds the pair.
func (h *holdClientCache) of(keyID string, ip netip.Addr) string {
	var mh maphash.Hash
	mh.SetSeed(h.seed)
	mh.WriteString(keyID)
	a := ip.As16()
	mh.Write(a[:])
	slot := &h.slots[mh.Sum64()&(holdClientSlots-1)]
	if e := slot.Load(); e != nil && e.ip == ip && e.keyID == keyID {
		return e.id
	}
	id := HoldClientOf(keyID, ip)
	slot.Store(&holdClientEntry{keyID: keyID, ip: ip, id: id})
	return id
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
