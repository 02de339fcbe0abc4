package actors

import (
	"crypto/rand"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"time"

	"ticketd/event"
)

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// crockfordLower is the ULID alphabet in lower case, as record ids show it.
const crockfordLower = "0123456789abcdefghjkmnpqrstvwxyz"

// ulidChars is the length of an encoded ULID.
const ulidChars = 26

// randomIDs is the production event.IDs: time-ordered ULID record ids and
// crypto-random codes.
type randomIDs struct{}

// New returns prefix + a lower-case ULID, so ids sort by creation time.
func (randomIDs) New(prefix string) string {
	var out [1]string
	ulids.fill(prefix, out[:])
	return out[0]
}

// NewBatch fills ids with prefix + a lower-case ULID each, in increasing
// order, in one clock read, one lock and one allocation (see idBatcher).
func (randomIDs) NewBatch(prefix string, ids []string) { ulids.fill(prefix, ids) }

// Code returns n crypto-random Crockford base32 characters.
func (randomIDs) Code(n int) string {
	buf := make([]byte, n)
	if _, err := rand.Read(buf); err != nil {
		panic("actors: crypto/rand: " + err.Error())
	}
	for i, b := range buf {
		buf[i] = crockford[b&31]
	}
	return string(buf)
}

// idBatcher is an event.IDs that makes many ids in one call: a door
// batch wants one check-in id per scan (500), and an id each costs a clock
// read, a lock and an allocation (~3% of the service's CPU in door-sync).
type idBatcher interface {
	// NewBatch fills ids with fresh ids with the prefix, each greater
	// than the one before.
	NewBatch(prefix string, ids []string)
}

// newIDs fills out with fresh ids from ids: in one call when it batches,
// else one New each (the tests' deterministic ids).
func newIDs(ids event.IDs, prefix string, out []string) {
	if b, ok := ids.(idBatcher); ok {
		b.NewBatch(prefix, out)
		return
	}
	for i := range out {
		out[i] = ids.New(prefix)
	}
}

// ulids is the process's ULID source: every id randomIDs makes comes from
// it, so they increase in the order they are made (the clock is read under
// the lock and never goes back), within a batch and across batches.
var ulids = newULIDGen()

// ulidGen makes monotonic ULIDs: a new millisecond starts from 80 random
// bits, and each further ULID of the same millisecond adds a random
// increment of 1 to 2^32 (as ulid.Monotonic does), so ids stay hard to
// guess from one another.
type ulidGen struct {
	mu     sync.Mutex
	ms     uint64 // the millisecond of the last ULID
	hi, lo uint64 // its 80 bits of entropy: 16 in hi, 64 in lo
	rng    *mrand.ChaCha8
}

func newULIDGen() *ulidGen {
	var seed [32]byte
	if _, err := rand.Read(seed[:]); err != nil {
		panic("actors: crypto/rand: " + err.Error())
	}
	return &ulidGen{rng: mrand.NewChaCha8(seed)}
}

// fill sets each element of out to prefix + a new ULID in lower case. The
// ids share one allocation (they are all kept, or all but a few: a batch's
// check-ins).
func (g *ulidGen) fill(prefix string, out []string) {
	if len(out) == 0 {
		return
	}
	w := len(prefix) + ulidChars
	var sb strings.Builder
	sb.Grow(w * len(out))
	var buf [64 + ulidChars]byte
	g.mu.Lock()
	ms := uint64(time.Now().UnixMilli())
	for range out {
		g.next(ms)
		b := append(buf[:0], prefix...)
		b = appendULID(b, g.ms, g.hi, g.lo)
		sb.Write(b)
	}
	g.mu.Unlock()
	s := sb.String()
	for i := range out {
		out[i] = s[i*w : (i+1)*w]
	}
}

// next moves the generator to its next ULID at ms (or at its last
// millisecond when the clock went back). Under g.mu.
func (g *ulidGen) next(ms uint64) {
	if ms > g.ms {
		g.ms, g.hi, g.lo = ms, g.rng.Uint64()&0xffff, g.rng.Uint64()
		return
	}
	inc := g.rng.Uint64()>>32 + 1 // 1 to 2^32
	lo := g.lo + inc
	if lo < g.lo {
		g.hi++
	}
	g.lo = lo
	if g.hi > 0xffff {
		// The millisecond's 80 bits overflowed (about 2^48 ids in one
		// millisecond): go on in the next one.
		g.ms, g.hi, g.lo = g.ms+1, g.rng.Uint64()&0xffff, g.rng.Uint64()
	}
}

// appendULID appends the ULID of millisecond ms and entropy (hi, lo) in
// lower-case Crockford base32: 26 characters of 5 bits each, the 128-bit
// value (48 bits of time, then 80 of entropy) right-aligned in 130 bits.
func appendULID(b []byte, ms, hi, lo uint64) []byte {
	// v = ms<<80 | hi<<64 | lo, as two 64-bit halves.
	vhi, vlo := ms<<16|hi&0xffff, lo
	var t [ulidChars]byte
	for i := ulidChars - 1; i >= 0; i-- {
		t[i] = crockfordLower[vlo&31]
		vlo = vlo>>5 | vhi<<59
		vhi >>= 5
	}
	return append(b, t[:]...)
}
