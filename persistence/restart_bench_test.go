package persistence_test

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/event"
	"ticketd/persistence"
	"ticketd/snapshots"
)

// restartIDs gives the one order of the benchmark its ids.
type restartIDs struct{ n int }

func (r *restartIDs) New(prefix string) string { r.n++; return prefix + "restart" + strconv.Itoa(r.n) }
func (r *restartIDs) Code(n int) string {
	r.n++
	return fmt.Sprintf("%0*d", n, r.n)[:n]
}

// BenchmarkRestartWithSnapshot measures what the benchmark targets call "first
// accepted order within 1 s of start" for an event of 1,000,000
// registrations, through the real parts the shell uses: persistence.Open,
// snapshots.Store.LoadNewest, event.UnmarshalStateOwned and Restore, then
// one storefront order decided, encoded and committed with fsync. Each
// phase is reported in ms. Building the event takes most of a minute on
// two cores, so -short skips it.
func BenchmarkRestartWithSnapshot(b *testing.B) {
	if testing.Short() {
		b.Skip("1,000,000 registrations: run without -short (make bench)")
	}
	const regs = 1_000_000
	const stream = "evt_01jd3k7m2q0000000000000000"
	dir := b.TempDir()
	s, err := persistence.Open(persistence.Options{Dir: dir, NoSync: true})
	require.NoError(b, err)
	// The state of an event with regs registrations, built in memory and
	// saved as a snapshot at the seq its log would have reached.
	mem, err := persistence.Open(persistence.Options{Dir: b.TempDir(), NoSync: true})
	require.NoError(b, err)
	seq := writeRegistrationLog(b, mem, stream, regs)
	m := event.NewMachine(stream, event.Config{}, nil)
	m.Reserve(seq)
	require.NoError(b, mem.Replay(stream, 0, func(_ uint64, rec []byte) error { return m.ApplyRecord(rec) }))
	require.NoError(b, mem.Close())
	state, err := event.MarshalState(m.State())
	require.NoError(b, err)
	require.NoError(b, snapshots.New(s, 2).Save(stream, uint64(seq), state))
	require.NoError(b, s.Close())
	typ := m.State().TypeOrder[0]
	m, state = nil, nil
	runtime.GC()

	var open, load, decode, order time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		s, err := persistence.Open(persistence.Options{Dir: dir})
		require.NoError(b, err)
		t1 := time.Now()
		at, snap, ok, err := snapshots.New(s, 2).LoadNewest(stream)
		require.NoError(b, err)
		require.True(b, ok)
		t2 := time.Now()
		st, err := event.UnmarshalStateOwned(snap)
		require.NoError(b, err)
		m := event.NewMachine(stream, event.Config{BaseURL: "http://t", OrderHold: 15 * time.Minute}, &restartIDs{})
		m.Restore(st)
		t3 := time.Now()
		_, chs, err := m.Decide(t3, event.Storefront{Cmd: event.PlaceOrder{Email: "first" + strconv.Itoa(i) + "@x.io",
			Items: []event.OrderItem{{ItemType: event.ItemRegistrationType, ItemID: typ, Quantity: 1}}, Storefront: true}})
		require.NoError(b, err)
		batch := s.NewBatch()
		for j, ch := range chs {
			rec, err := event.MarshalChange(ch)
			require.NoError(b, err)
			batch.Append(stream, at+uint64(j)+1, rec)
			m.Apply(ch)
		}
		require.NoError(b, s.Commit(batch))
		batch.Close()
		t4 := time.Now()
		open, load, decode, order = open+t1.Sub(t0), load+t2.Sub(t1), decode+t3.Sub(t2), order+t4.Sub(t3)
		b.StopTimer()
		// The next start meets the same log: drop the order again.
		require.NoError(b, s.TruncateAfter(stream, at))
		require.NoError(b, s.Close())
		// A fresh process has no old state to collect.
		m, st, snap = nil, nil, nil
		runtime.GC()
		b.StartTimer()
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(open), "open-ms")
	b.ReportMetric(ms(load), "load-ms")
	b.ReportMetric(ms(decode), "decode-ms")
	b.ReportMetric(ms(order), "order-ms")
	b.ReportMetric(ms(open+load+decode+order), "first-order-ms")
}
