package event

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// goRunner runs every task on its own goroutine, the most concurrent
// Runner there is.
func goRunner(tasks ...func()) {
	var wg sync.WaitGroup
	for _, t := range tasks {
		wg.Go(t)
	}
	wg.Wait()
}

// requireSameDecode decodes snap in order and concurrently and requires
// the same state: records, maps by id and every index. It returns the
// concurrent one.
func requireSameDecode(t testing.TB, snap []byte) *State {
	t.Helper()
	want, err := UnmarshalState(snap)
	require.NoError(t, err)
	got, err := DecodeState(append([]byte(nil), snap...), DecodeOptions{Owned: true, Run: goRunner})
	require.NoError(t, err)
	again, err := MarshalState(got)
	require.NoError(t, err)
	require.Equal(t, string(snap), string(again), "the state decoded concurrently encodes differently")
	require.Equal(t, len(want.regs()), len(got.regs()))
	for id, r := range want.regs() {
		require.Equal(t, *r, *got.regs()[id])
	}
	require.Equal(t, len(want.Orders), len(got.Orders))
	require.Equal(t, len(want.checkins()), len(got.checkins()))
	require.Equal(t, want.idx.regByEmail, got.idx.regByEmail)
	require.Equal(t, want.idx.emailPrev, got.idx.emailPrev)
	require.Equal(t, want.idx.codeByCode, got.idx.codeByCode)
	require.Equal(t, want.idx.orderByNumber, got.idx.orderByNumber)
	require.Equal(t, want.idx.orderByPayment, got.idx.orderByPayment)
	require.Equal(t, want.idx.waitlist, got.idx.waitlist)
	require.Equal(t, want.idx.holds, got.idx.holds)
	return got
}

// A section larger than a decoding chunk is decoded in several tasks; the
// result is the state decoded in order, whatever runs the tasks.
func TestDecodeStateConcurrentlyIsTheSameState(t *testing.T) {
	n := bigSectionChunk + bigSectionChunk/2 + 7 // two chunks, the last partial
	m := replayLog(t, registrationLog(t, n), false)
	snap, err := MarshalState(m.State())
	require.NoError(t, err)
	got := requireSameDecode(t, snap)
	require.Len(t, got.RegOrder, n)
	for i, id := range got.RegOrder {
		require.Equal(t, i, got.regs()[id].Seq)
		require.Same(t, got.regs()[id], got.mem.regList[i])
	}
}

// A duplicate id in a large section, or a record cut short in any chunk,
// is an error from either Runner.
func TestDecodeStateRejectsDuplicatesAndCorruptChunks(t *testing.T) {
	n := bigSectionChunk + 10
	m := replayLog(t, registrationLog(t, n), false)
	st := m.State()
	last := st.mem.regList[n-1]
	saved := last.ID
	last.ID = st.mem.regList[3].ID // a second registration with that id
	dup, err := MarshalState(st)
	last.ID = saved
	require.NoError(t, err)
	for _, run := range []Runner{RunInOrder, goRunner} {
		_, err := DecodeState(dup, DecodeOptions{Run: run})
		require.Error(t, err)
	}
	st.mem.regList[n-2].TypeID = "tt_unknown" // a reference that does not resolve
	badRef, err := MarshalState(st)
	st.mem.regList[n-2].TypeID = st.mem.regList[0].TypeID
	require.NoError(t, err)
	for _, run := range []Runner{RunInOrder, goRunner} {
		_, err := DecodeState(badRef, DecodeOptions{Run: run})
		require.ErrorContains(t, err, "unknown type")
	}
	good, err := MarshalState(st)
	require.NoError(t, err)
	// Cuts inside the registrations (a snapshot that ends between sections
	// decodes the rest as empty, by design).
	for _, cut := range []int{len(good) / 3, len(good) / 2, len(good) * 3 / 4} {
		for _, run := range []Runner{RunInOrder, goRunner} {
			_, err := DecodeState(good[:cut], DecodeOptions{Run: run})
			require.Error(t, err, "cut at %d", cut)
		}
	}
}

// A snapshot load leaves the registrations by id to their first use when
// their ids increase (they are then unique) and nothing in the load needs
// them: an order placement does not build it, a read by id does, and both
// see what an eager load sees.
func TestDecodeStateLeavesRegistrationsByIDToFirstUse(t *testing.T) {
	const n = 500
	m := replayLog(t, registrationLog(t, n), false)
	m.State().Types[m.State().TypeOrder[0]].IsPublic = true // on sale without a code
	snap, err := MarshalState(m.State())
	require.NoError(t, err)
	st, err := DecodeState(snap, DecodeOptions{Run: goRunner})
	require.NoError(t, err)
	require.True(t, st.idx.regsLazy)
	require.Nil(t, st.Regs)

	lm := NewMachine(st.ID, testConfig(), &benchIDs{})
	lm.Restore(st)
	now := time.Date(2026, 9, 1, 9, 0, 0, 0, time.UTC)
	items := []OrderItem{{ItemType: ItemRegistrationType, ItemID: st.TypeOrder[0], Quantity: 1}}
	// A new buyer's order, and one of a registered buyer (already registered).
	for _, email := range []string{"new@bench.example", "p7@bench.example"} {
		_, _, err := shellStep(lm, now, PlaceOrder{Email: email, Items: items})
		require.NoError(t, err, email)
		if email == "new@bench.example" {
			require.True(t, st.idx.regsLazy, "a new buyer's order needs no registration by id")
		}
	}
	id := st.RegOrder[42]
	res, _, err := lm.Decide(now, GetRegistration{ID: id})
	require.NoError(t, err)
	require.False(t, st.idx.regsLazy, "a read by id builds the map")
	require.Len(t, st.Regs, n)
	require.Equal(t, id, res.(Registration).ID)

	// Ids out of order: the map is filled during the load.
	m2 := replayLog(t, registrationLog(t, n), false)
	s2 := m2.State()
	s2.RegOrder[10], s2.RegOrder[11] = s2.RegOrder[11], s2.RegOrder[10]
	s2.mem.regList[10], s2.mem.regList[11] = s2.mem.regList[11], s2.mem.regList[10]
	unordered, err := MarshalState(s2)
	require.NoError(t, err)
	eager, err := DecodeState(unordered, DecodeOptions{Run: goRunner})
	require.NoError(t, err)
	require.False(t, eager.idx.regsLazy)
	require.Len(t, eager.Regs, n)
}

// The yield hook of a background encode and decode is called about once
// every paceEvery records and changes nothing in what they produce.
func TestEncodeAndDecodeYieldEveryFewHundredRecords(t *testing.T) {
	n := 10*paceEvery + 3
	m := replayLog(t, registrationLog(t, n), false)
	want, err := MarshalState(m.State())
	require.NoError(t, err)

	var yields int
	got, err := EncodeState(m.State(), func() { yields++ })
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "a yield hook changed the encoding")
	require.GreaterOrEqual(t, yields, n/paceEvery, "the encode held on for more than paceEvery records at a time")
	require.LessOrEqual(t, yields, n/paceEvery+4)

	yields = 0
	var mu sync.Mutex // goRunner calls the hook from several goroutines
	st, err := DecodeState(append([]byte(nil), want...), DecodeOptions{Run: goRunner, Yield: func() { mu.Lock(); yields++; mu.Unlock() }})
	require.NoError(t, err)
	// Records, the map by id and the e-mail index each pace themselves.
	require.GreaterOrEqual(t, yields, n/paceEvery)
	again, err := MarshalState(st)
	require.NoError(t, err)
	require.Equal(t, string(want), string(again), "a yield hook changed the decoded state")
}
