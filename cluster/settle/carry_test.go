package settle

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"ticketd/cluster/clustertest"

	"github.com/stretchr/testify/require"

	"ticketd/persistence"
)

// mailValue is about a ticket mail's outbox value (700 bytes of JSON).
func mailValue(evt string, i int) []byte {
	v := fmt.Sprintf(`{"kind":"ticket","eventId":%q,"email":"buyer%d@example.com","checkinCode":"C%08d","pad":"`, evt, i, i)
	return []byte(v + strings.Repeat("x", 700-len(v)-2) + `"}`)
}

// commitMails appends records from..to of evt through w, the first one
// owing mails [m0, m1).
func commitMails(t *testing.T, w persistence.Log, evt string, from, to uint64, m0, m1 int) {
	t.Helper()
	b := w.NewBatch()
	defer b.Close()
	for s := from; s <= to; s++ {
		b.Append(evt, s, fmt.Appendf(nil, "r%d", s))
	}
	for i := m0; i < m1; i++ {
		b.Put([]byte(mailKey(evt, i)), mailValue(evt, i))
	}
	wait, err := w.CommitAsync(b)
	require.NoError(t, err)
	require.NoError(t, wait())
}

// importedMails is the mails of evt in w's store, and whether each has
// its value.
func importedMails(t *testing.T, w *owner, evt string) int {
	t.Helper()
	n := 0
	require.NoError(t, w.store.Scan([]byte("mail/"+evt+"/"), func(k, v []byte) error {
		var i int
		_, err := fmt.Sscanf(string(k[len("mail/"+evt+"/"):]), "%016x-0000", &i)
		require.NoError(t, err)
		require.Equal(t, string(mailValue(evt, i)), string(v), "%s", k)
		n++
		return nil
	}))
	return n
}

// TestSnapshotCarriesThousands: a busy event owing 2,500 ticket mails
// (the relay down during a drop) has its log trimmed by its own
// snapshots; the mails go to its settled subject first, as a delta, and
// the next snapshot carries only what was owed since (not the 2,500
// again). A new owner imports every mail, values and all, though no
// message of the log puts the first 2,800 any more. Before, a carry was
// capped at 1,000 entries and the trim went on without it: the new owner
// imported the 10 mails the log still put.
func TestSnapshotCarriesThousands(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	const evt = "evt_busy_thousands"
	lead := shardLeader(t, nodes, evt)
	a, b := newOwner(t, nodes[lead]), newOwner(t, nodes[(lead+1)%3])
	w := clustertest.Claim(t, a.log, evt, 0)
	for r := range 5 { // records 1..5: 500 mails each
		commitMails(t, w, evt, uint64(r+1), uint64(r+1), 500*r, 500*(r+1))
	}
	commitMails(t, w, evt, 6, 10, 2500, 2510)
	snaps := NewSnapshots(a.log)
	_, err := snaps.SaveAndTrim(evt, 5, []byte("state at 5"))
	require.NoError(t, err)
	through, err := snaps.SaveAndTrim(evt, 10, []byte("state at 10"))
	require.NoError(t, err)
	require.Equal(t, uint64(5), through)
	first, err := a.log.FirstSeq(evt)
	require.NoError(t, err)
	require.Equal(t, uint64(6), first, "the messages of records 1..5 purged")
	msgs, _, _ := settledState(t, nodes[lead], evt)
	sent := snaps.carrier.sentBytes.Load()
	t.Logf("first carry: 2,510 mails in %d messages, %d bytes", msgs, sent)
	require.Greater(t, sent, int64(2510*700), "every mail carried, values and all")

	// 300 more mails; the next snapshot trims through 10 and carries
	// those alone.
	commitMails(t, w, evt, 11, 15, 2510, 2810)
	through, err = snaps.SaveAndTrim(evt, 15, []byte("state at 15"))
	require.NoError(t, err)
	require.Equal(t, uint64(10), through)
	again := snaps.carrier.sentBytes.Load() - sent
	t.Logf("second carry: %d bytes", again)
	require.Less(t, again, int64(400*1000), "the 300 new mails, not the 2,810")
	commitMails(t, w, evt, 16, 16, 2810, 2820) // owed by the log still

	_, n := b.activate(t, evt)
	require.Equal(t, 2820, n, "2,810 mails carried, 10 from the log")
	require.Equal(t, 2820, importedMails(t, b, evt))
}

// TestCarryHeldBack: a carry the settled subject cannot take (more than
// one rollup: here, with parts of 1 KiB, 256 KiB) holds the trim back
// rather than trimming without the copy: the snapshot is kept as the
// newest, the older one kept stays the one the log is trimmed through,
// and a new owner imports every mail from the log.
func TestCarryHeldBack(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	const evt = "evt_carry_held"
	lead := shardLeader(t, nodes, evt)
	a, b := newOwner(t, nodes[lead]), newOwner(t, nodes[(lead+1)%3])
	w := clustertest.Claim(t, a.log, evt, 0)
	commitMails(t, w, evt, 1, 5, 0, 10)
	commitMails(t, w, evt, 6, 10, 10, 20)
	snaps := NewSnapshots(a.log)
	snaps.carrier.partBytes = 1024
	_, err := snaps.SaveAndTrim(evt, 5, []byte("state at 5"))
	require.NoError(t, err)
	through, err := snaps.SaveAndTrim(evt, 10, []byte("state at 10"))
	require.NoError(t, err)
	require.Equal(t, uint64(5), through, "10 mails carried: trimmed")

	commitMails(t, w, evt, 11, 15, 20, 520) // 500 mails: 470 KiB of lines
	through, err = snaps.SaveAndTrim(evt, 15, []byte("state at 15"))
	require.NoError(t, err)
	require.Zero(t, through, "held back")
	first, err := a.log.FirstSeq(evt)
	require.NoError(t, err)
	require.Equal(t, uint64(6), first, "records 6..10 kept")
	list, _, err := snaps.Seqs(bg, evt, true)
	require.NoError(t, err)
	require.Equal(t, []uint64{5, 15}, list, "the newest snapshot kept, the log trimmed through the older")

	// A load elsewhere keeps the log from 5 too; the new owner imports
	// the 10 mails carried and the 510 the log still puts.
	_, n := b.activate(t, evt)
	require.Equal(t, 520, n)
	require.Equal(t, 520, importedMails(t, b, evt))
}

// TestCarryStaysBounded: carries and settling passes interleaved, many
// times over, on one event owing thousands of entries (growing, then
// delivered faster than owed): the subject holds at most settledMsgsMax
// messages or about twice its rollup's parts, it is rolled up as the set
// shrinks, all of it republishes far less than carrying the whole set
// each time would, and a new owner imports exactly the entries not
// delivered.
func TestCarryStaysBounded(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes, _ := clustertest.StartCluster(t, 3)
	const evt = "evt_carry_bounded"
	lead := shardLeader(t, nodes, evt)
	a, b := newOwner(t, nodes[lead]), newOwner(t, nodes[(lead+1)%3])
	a.log.OnIndex = a.o.NoteIndex
	// The carries are a writer of their own, as the snapshots' are
	// (NewSnapshots): each meets the passes' messages since its last.
	a.o.partBytes = 16 << 10 // a rollup of the whole set: up to 60 parts
	carrier := &Owed{Node: nodes[lead], Log: a.log, Store: a.store, partBytes: a.o.partBytes}
	w := clustertest.Claim(t, a.log, evt, 0)
	const rounds = 40
	whole := int64(0) // what carrying the whole set each time would send
	put, delivered, rollups := 0, 0, 0
	for r := range rounds {
		// 50 mails a round, 10 delivered; from round 20 on, 5 and 40.
		add, give := 50, 10
		if r >= 20 {
			add, give = 5, 40
		}
		commitMails(t, w, evt, uint64(r+1), uint64(r+1), put, put+add)
		put += add
		require.NoError(t, carrier.carry(bg, evt))
		whole += int64(put-delivered) * 980
		var keys []string
		for ; give > 0 && delivered < put; give-- {
			keys = append(keys, mailKey(evt, delivered))
			delivered++
		}
		before, _, _ := settledState(t, nodes[lead], evt)
		a.deliver(t, evt, keys...)
		m, err := a.o.readMarks(bg, evt)
		require.NoError(t, err)
		parts := (m.setBytes(nil) + a.o.limit() - 1) / a.o.limit()
		msgs, _, _ := settledState(t, nodes[lead], evt)
		if msgs < before {
			rollups++
		}
		// A delivery shrinks the set by at most three parts.
		require.LessOrEqual(t, msgs, max(settledMsgsMax, 2*(parts+3)), "round %d", r)
	}
	sent := a.o.sentBytes.Load() + carrier.sentBytes.Load()
	msgs, stored, _ := settledState(t, nodes[lead], evt)
	t.Logf("%d rounds: %d messages, %d bytes sent (whole set each time: %d); %d rollups after a pass; the subject holds %d messages, %d bytes",
		rounds, a.o.sentMsgs.Load()+carrier.sentMsgs.Load(), sent, whole, rollups, msgs, stored)
	require.Less(t, sent, whole/3)
	require.Positive(t, rollups)
	// The carrier, reading what followed its last message, met the
	// passes' rollups (their first part's Nats-Rollup header) and knows
	// the subject as it is.
	m, err := carrier.marks(bg, evt)
	require.NoError(t, err)
	require.NoError(t, carrier.refresh(bg, evt, m))
	require.Equal(t, msgs, m.msgs)
	fresh, err := a.o.readMarks(bg, evt)
	require.NoError(t, err)
	require.Equal(t, fresh.owing(), m.owing())
	// The log trimmed behind it all (no message puts a mail any more).
	commitMails(t, w, evt, rounds+1, rounds+1, 0, 0)
	require.NoError(t, a.log.Trim(bg, evt, rounds))
	_, n := b.activate(t, evt)
	require.Equal(t, put-delivered, n)
	require.Equal(t, put-delivered, importedMails(t, b, evt))
}

// TestCarryCost measures what a busy event's snapshot costs (SaveAndTrim:
// the state saved, what the event owes carried, the log trimmed) while
// the event owes thousands of ticket mails, 200 more owed before each
// snapshot: the first trim's, which carries them all, and the next ten's.
// Bytes are those the owner's connection published (the state's 64 KiB
// included). It asserts no time. It runs when TICKETD_CLUSTER_BENCH=1.
func TestCarryCost(t *testing.T) {
	if os.Getenv("TICKETD_CLUSTER_BENCH") == "" {
		t.Skip("set TICKETD_CLUSTER_BENCH=1")
	}
	for _, owedN := range []int{5_000, 20_000} {
		t.Run(fmt.Sprintf("owed=%d", owedN), func(t *testing.T) {
			carryCost(t, owedN, nil, func(s *Snapshots, evt string) {
				// What a rollup of the whole set costs (once the
				// subject holds twice its parts).
				o := s.carrier
				m, err := o.marks(bg, evt)
				require.NoError(t, err)
				sent, t0 := o.sentBytes.Load(), time.Now()
				require.NoError(t, o.rollup(bg, evt, m, nil, nil))
				t.Logf("a rollup of the whole set: %d ms, %.2f MB in %d parts", time.Since(t0).Milliseconds(),
					float64(o.sentBytes.Load()-sent)/1e6, m.msgs)
			})
		})
	}
}

// carryCost runs TestCarryCost's snapshots of an event owing owedN mails;
// before, if set, runs before each (another build's carry), after, if
// set, after them.
func carryCost(t *testing.T, owedN int, before func(s *Snapshots, evt string) error, after func(s *Snapshots, evt string)) {
	nodes, _ := clustertest.StartCluster(t, 3)
	const evt = "evt_carry_cost"
	lead := shardLeader(t, nodes, evt)
	a, b := newOwner(t, nodes[lead]), newOwner(t, nodes[(lead+1)%3])
	w := clustertest.Claim(t, a.log, evt, 0)
	seq, put := uint64(0), 0
	for put < owedN {
		seq++
		next := min(put+500, owedN)
		commitMails(t, w, evt, seq, seq, put, next)
		put = next
	}
	snaps := NewSnapshots(a.log)
	state := make([]byte, 64<<10)
	_, err := snaps.SaveAndTrim(evt, seq, state)
	require.NoError(t, err)
	nc := nodes[lead].Conn()
	const snapshots, per = 10, 200
	var ms []float64
	var sent []uint64
	for i := range snapshots + 1 {
		seq++
		commitMails(t, w, evt, seq, seq, put, put+per)
		put += per
		out := nc.Stats().OutBytes
		t0 := time.Now()
		if before != nil {
			require.NoError(t, before(snaps, evt))
		}
		through, err := snaps.SaveAndTrim(evt, seq, state)
		require.NoError(t, err)
		require.Equal(t, seq-1, through)
		d, n := time.Since(t0), nc.Stats().OutBytes-out
		if i == 0 {
			t.Logf("owed %d: the first trim's snapshot: %.1f ms, %.2f MB published", put, float64(d.Microseconds())/1000, float64(n)/1e6)
			continue
		}
		ms = append(ms, float64(d.Microseconds())/1000)
		sent = append(sent, n)
	}
	slices.Sort(ms)
	slices.Sort(sent)
	t.Logf("owed %d..%d: the next %d snapshots: %.1f ms median (%.1f..%.1f), %.2f MB median published (%.2f..%.2f)",
		owedN+per, put, snapshots, ms[len(ms)/2], ms[0], ms[len(ms)-1],
		float64(sent[len(sent)/2])/1e6, float64(sent[0])/1e6, float64(sent[len(sent)-1])/1e6)
	if after != nil {
		after(snaps, evt)
	}
	t0 := time.Now()
	_, n := b.activate(t, evt)
	t.Logf("a next owner imports %d of the %d mails owed (claim and import: %d ms)", n, put, time.Since(t0).Milliseconds())
}
