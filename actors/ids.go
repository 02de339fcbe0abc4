package actors

import (
	"crypto/rand"

	"github.com/oklog/ulid/v2"
)

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// randomIDs is the production event.IDs: time-ordered ULID record ids and
// crypto-random codes.
type randomIDs struct{}

// New returns prefix + a lower-case ULID, so ids sort by creation time.
func (randomIDs) New(prefix string) string {
	// One allocation of its own (the string): a door batch makes an id per check-in
	// on the event's actor.
	var t [ulid.EncodedSize]byte
	_ = ulid.Make().MarshalTextTo(t[:])
	for i, c := range t {
		if 'A' <= c && c <= 'Z' {
			t[i] = c + 'a' - 'A'
		}
	}
	var b [64]byte
	return string(append(append(b[:0], prefix...), t[:]...))
}

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
