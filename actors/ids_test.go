package actors

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"
)

// parseID checks id is prefix + a lower-case ULID and returns the ULID.
func parseID(t *testing.T, prefix, id string) ulid.ULID {
	t.Helper()
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok || len(rest) != ulid.EncodedSize || strings.ToLower(rest) != rest {
		t.Fatalf("id %q", id)
	}
	u, err := ulid.ParseStrict(strings.ToUpper(rest))
	if err != nil {
		t.Fatalf("id %q: %v", id, err)
	}
	return u
}

// TestRandomIDsNew: prefix + a lower-case ULID that parses back, one
// allocation (four before: String, ToLower, the concatenation).
func TestRandomIDsNew(t *testing.T) {
	id := randomIDs{}.New("chk_")
	parseID(t, "chk_", id)
	if a := testing.AllocsPerRun(100, func() { randomIDs{}.New("chk_") }); a > 1 {
		t.Errorf("%v allocations an id, want 1", a)
	}
}

// TestRandomIDsBatch: a batch's ids are ULIDs of now, unique and
// increasing within the batch and with the ids made before and after it
// one at a time, in one allocation for the batch.
func TestRandomIDsBatch(t *testing.T) {
	var all []string
	before := randomIDs{}.New("chk_")
	all = append(all, before)
	for _, n := range []int{1, 2, 500, 3} {
		ids := make([]string, n)
		newIDs(randomIDs{}, "chk_", ids)
		all = append(all, ids...)
		all = append(all, randomIDs{}.New("chk_"))
	}
	var prev ulid.ULID
	for i, id := range all {
		u := parseID(t, "chk_", id)
		if i > 0 && u.Compare(prev) <= 0 {
			t.Fatalf("id %d %s not after %s", i, id, all[i-1])
		}
		if d := int64(ulid.Now()) - int64(u.Time()); d < 0 || d > 60_000 {
			t.Fatalf("id %s: time %d ms from now", id, d)
		}
		prev = u
	}
	if !slices.IsSorted(all) {
		t.Fatal("ids do not sort as strings in the order made")
	}
	ids := make([]string, 500)
	if a := testing.AllocsPerRun(20, func() { newIDs(randomIDs{}, "chk_", ids) }); a > 1 {
		t.Errorf("%v allocations a batch of 500 ids, want 1", a)
	}
}

// TestULIDGenMonotonic: within one millisecond (or with the clock gone
// back) each ULID exceeds the one before, and an overflow of the
// millisecond's entropy moves on to the next millisecond.
func TestULIDGenMonotonic(t *testing.T) {
	g := newULIDGen()
	key := func() [16]byte {
		var u [16]byte
		binary.BigEndian.PutUint64(u[:8], g.ms<<16|g.hi)
		binary.BigEndian.PutUint64(u[8:], g.lo)
		return u
	}
	g.next(1000)
	last := key()
	for _, ms := range []uint64{1000, 1000, 999, 1, 1000, 1001, 1001} {
		g.next(ms)
		k := key()
		if slices.Compare(k[:], last[:]) <= 0 {
			t.Fatalf("ms %d: %x not after %x", ms, k, last)
		}
		last = k
	}
	g.hi, g.lo = 0xffff, ^uint64(0)-1
	ms := g.ms
	g.next(ms)
	if g.ms != ms+1 || g.hi > 0xffff {
		t.Fatalf("after overflow: ms %d (was %d), hi %x", g.ms, ms, g.hi)
	}
}

// TestAppendULID: the encoding is ulid's, in lower case.
func TestAppendULID(t *testing.T) {
	g := newULIDGen()
	for i := range 1000 {
		ms, hi, lo := g.rng.Uint64()&(1<<48-1), g.rng.Uint64()&0xffff, g.rng.Uint64()
		if i == 0 {
			ms, hi, lo = 1<<48-1, 0xffff, ^uint64(0)
		}
		var u ulid.ULID
		binary.BigEndian.PutUint64(u[:8], ms<<16|hi)
		binary.BigEndian.PutUint64(u[8:], lo)
		if got, want := string(appendULID(nil, ms, hi, lo)), strings.ToLower(u.String()); got != want {
			t.Fatalf("%x: %s, want %s", u, got, want)
		}
	}
}

// legacyNew is New as it was: ulid.Make per id.
func legacyNew(prefix string) string {
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

// BenchmarkCheckinIDs500 makes the check-in ids of a door batch of 500
// scans: one New each as before (legacy: ulid.Make), one New each from
// the monotonic source, and one NewBatch.
func BenchmarkCheckinIDs500(b *testing.B) {
	ids := make([]string, 500)
	run := func(name string, f func()) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids)), "ns/id")
		})
	}
	run("legacy", func() {
		for i := range ids {
			ids[i] = legacyNew("chk_")
		}
	})
	run("new", func() {
		for i := range ids {
			ids[i] = randomIDs{}.New("chk_")
		}
	})
	run("batch", func() { newIDs(randomIDs{}, "chk_", ids) })
}
