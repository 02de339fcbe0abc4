package event

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// queueJoinsDrop is a published event with a waiting room on sale at
// onSale, seeded ids.
func queueJoinsDrop(t *testing.T, seed uint64, now, onSale time.Time) *Machine {
	t.Helper()
	m := NewMachine("evt_1", testConfig(), newSeqIDs(seed))
	mustStep(t, m, now, CreateEvent{Name: "Drop", Timezone: "UTC", StartsAt: &Time{Time: now.Add(240 * time.Hour)}})
	c := 3
	tt := mustStep(t, m, now, CreateTicketType{Name: "T", Capacity: &c}).(TicketType)
	mustStep(t, m, now, UpdateTicketType{ID: tt.ID, Status: Some("open")})
	rate := 60
	mustStep(t, m, now, UpdateEvent{Status: Some(EventPublished), WaitingRoom: &WaitingRoomConfig{OnSaleAt: &Time{Time: onSale}, AdmitPerMinute: &rate}})
	return m
}

// TestJoinQueuesIsJoinsInOrder: a batch of joins (one command, one
// record) decides, answers and applies as the same joins one by one, in
// the batch's order, before the shuffle (the pre-queue, shuffled at
// onSaleAt) and after it (queued in join order behind it); its record
// replays to the same state; a batch refused (sold out, no room) changes
// nothing.
func TestJoinQueuesIsJoinsInOrder(t *testing.T) {
	now := time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC)
	onSale := now.Add(time.Hour)
	one, batch := queueJoinsDrop(t, 7, now, onSale), queueJoinsDrop(t, 7, now, onSale)
	var log [][]byte
	record := func(m *Machine, at time.Time, c Command) any {
		t.Helper()
		res, chs, err := m.Decide(at, c)
		require.NoError(t, err)
		for _, ch := range chs {
			m.Apply(ch)
			if m == batch {
				b, err := MarshalChange(ch)
				require.NoError(t, err)
				log = append(log, b)
			}
		}
		return res
	}
	// The set-up's records, for the replay below: the two machines took
	// the same steps so far.
	joinRound := func(at time.Time, clients []string) {
		t.Helper()
		var want []QueueStatus
		for _, c := range clients {
			want = append(want, record(one, at, Storefront{Cmd: JoinQueue{Client: c}}).(QueueStatus))
		}
		got := record(batch, at, Storefront{Cmd: JoinQueues{Clients: clients}}).(QueueJoins)
		a, _ := json.Marshal(want)
		b, _ := json.Marshal(got.Statuses)
		require.JSONEq(t, string(a), string(b), "a batch answers as its joins one by one")
	}
	joinRound(now, []string{"c1", "c2", "c3", "c1"})
	joinRound(now.Add(time.Minute), []string{"c4"})
	record(one, onSale, Expire{Now: onSale})
	record(batch, onSale, Expire{Now: onSale})
	joinRound(onSale.Add(time.Second), []string{"c5", "c6", "c7"})
	require.Equal(t, one.State().Room.Entries, batch.State().Room.Entries, "the same entries, clients, ranks and times")
	require.Equal(t, one.roomView(), batch.roomView())
	// After the shuffle the batch queues in its order behind the pre-queue.
	r := batch.State().Room
	for seq := 5; seq < 8; seq++ {
		require.Equal(t, seq, r.Entries[seq].Rank)
	}

	// The log of the batch machine's joins replays to its state.
	replayed := queueJoinsDrop(t, 7, now, onSale)
	// (the set-up again, then the recorded changes)
	for _, rec := range log {
		require.NoError(t, replayed.ApplyRecord(rec))
	}
	require.Equal(t, len(batch.State().Room.Entries), len(replayed.State().Room.Entries))
	for i, e := range batch.State().Room.Entries {
		x := replayed.State().Room.Entries[i]
		require.Equal(t, []any{e.ID, e.Client, e.Rank, e.JoinedAt.UnixNano()}, []any{x.ID, x.Client, x.Rank, x.JoinedAt.UnixNano()})
	}

	// An empty batch decides nothing; a refused one changes nothing.
	res, chs, err := batch.Decide(onSale, Storefront{Cmd: JoinQueues{}})
	require.NoError(t, err)
	require.Empty(t, chs)
	require.Empty(t, res.(QueueJoins).Statuses)
	off := false
	mustStep(t, batch, onSale, UpdateEvent{WaitingRoom: &WaitingRoomConfig{Enabled: &off}})
	_, chs, err = batch.Decide(onSale, Storefront{Cmd: JoinQueues{Clients: []string{"x"}}})
	require.Empty(t, chs)
	require.Equal(t, ReasonNoWaitingRoom, err.(*Error).Reason)
}
