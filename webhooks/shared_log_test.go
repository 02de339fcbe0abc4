package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/persistence"
	"ticketd/webhooks"
)

// sharedCopy applies what Share puts to every node's store in the order
// put, from one goroutine, then tells each node's Service: what the
// cluster's shared index does, over real Pebble stores.
//
// The copy stops before the Services do (cleanups run last-registered
// first): a delivery that finishes in between has its put refused, not
// sent on the closed channel.
type sharedCopy struct {
	mu      sync.Mutex
	stopped bool
	entries chan [2][]byte
	done    chan struct{}
}

var errCopyStopped = errors.New("shared copy stopped")

func newSharedCopy(t *testing.T, nodes []*webhooks.Service, stores []*persistence.Store) *sharedCopy {
	c := &sharedCopy{entries: make(chan [2][]byte, 1024), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for e := range c.entries {
			for i, st := range stores {
				b := st.NewBatch()
				b.Put(e[0], e[1])
				if err := st.Commit(b); err != nil {
					t.Errorf("copy: %v", err)
				}
				b.Close()
				nodes[i].EndpointChanged(e[0], e[1])
				nodes[i].DeliveryChanged(e[0], e[1])
			}
		}
	}()
	t.Cleanup(func() {
		c.mu.Lock()
		c.stopped = true
		close(c.entries)
		c.mu.Unlock()
		<-c.done
	})
	return c
}

func (c *sharedCopy) put(_ context.Context, key, value []byte, _ time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return errCopyStopped
	}
	c.entries <- [2][]byte{append([]byte(nil), key...), append([]byte(nil), value...)}
	return nil
}

// TestSharedDeliveryLog: with Share, the deliveries one node makes are
// listed on another, each node keeping the newest LogMax, and can be sent
// again through the other; the endpoint's deletion through the other
// drops the log on both.
func TestSharedDeliveryLog(t *testing.T) {
	rc := newReceiver(t, 0)
	a, sa := open(t, webhooks.Config{AllowPrivate: true, LogMax: 3})
	b, sb := open(t, webhooks.Config{AllowPrivate: true, LogMax: 3})
	shared := newSharedCopy(t, []*webhooks.Service{a, b}, []*persistence.Store{sa, sb})
	a.Share(shared.put)
	b.Share(shared.put)

	ep, err := b.Create("bu_1", webhooks.Input{URL: ptr(rc.srv.URL), EventTypes: []string{webhooks.HookRegistrationCreated}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, err := a.Get("bu_1", ep.ID); return err == nil }, 5*time.Second, 10*time.Millisecond)
	for i := range 5 {
		enqueue(t, sa, string(rune('a'+i)), "bu_1", webhooks.HookRegistrationCreated)
	}
	a.Wake()
	require.Eventually(t, func() bool { return len(rc.got()) == 5 }, 10*time.Second, 10*time.Millisecond)
	var onA []webhooks.Delivery
	require.Eventually(t, func() bool {
		onA, err = a.Deliveries("bu_1", ep.ID)
		require.NoError(t, err)
		onB, err := b.Deliveries("bu_1", ep.ID)
		require.NoError(t, err)
		return len(onA) == 3 && len(onB) == 3 && onA[0].ID == onB[0].ID && onA[2].ID == onB[2].ID
	}, 5*time.Second, 10*time.Millisecond, "the newest 3 of 5 deliveries on both nodes")

	// Sent again through B: delivered by B, listed on A.
	_, _, err = b.Resend("bu_1", ep.ID, onA[2].ID)
	require.NoError(t, err)
	b.Wake()
	require.Eventually(t, func() bool { return len(rc.got()) == 6 }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		l, err := a.Deliveries("bu_1", ep.ID)
		require.NoError(t, err)
		return len(l) == 3 && l[0].ID != onA[0].ID
	}, 5*time.Second, 10*time.Millisecond, "the resend by B listed on A, still 3 kept")

	require.NoError(t, b.Delete("bu_1", ep.ID))
	for _, st := range []*persistence.Store{sa, sb} {
		require.Eventually(t, func() bool {
			n := 0
			require.NoError(t, st.Scan([]byte("whlog/"), func(_, _ []byte) error { n++; return nil }))
			return n == 0
		}, 5*time.Second, 10*time.Millisecond, "the log dropped with the endpoint")
	}
}

// enqueueFor writes a queue entry of event's as its actor would.
func enqueueFor(t *testing.T, st *persistence.Store, event, id string) webhooks.HookEvent {
	h := webhooks.HookEvent{ID: "whevt_" + id, Type: webhooks.HookRegistrationCreated, EventID: event, UnitID: "bu_1",
		CreatedAt: time.Now().UTC(), Data: json.RawMessage(`{"id":"reg_1"}`)}
	b, err := json.Marshal(h)
	require.NoError(t, err)
	bt := st.NewBatch()
	defer bt.Close()
	bt.Put([]byte(webhooks.InboxPrefix+event+"/"+id), b)
	require.NoError(t, st.Commit(bt))
	return h
}

// keys lists st's keys under prefix.
func keys(t *testing.T, st *persistence.Store, prefix string) []string {
	var out []string
	require.NoError(t, st.Scan([]byte(prefix), func(k, _ []byte) error { out = append(out, string(k)); return nil }))
	return out
}

// TestSharedFanOutPendingUntilDelivered: in cluster mode a fanned-out
// webhook event stays in its queue (parked, with a count of its pending
// deliveries) until every endpoint's delivery is settled, so that the
// event's next owner fans it out again if this node is lost first; the
// last settled delivery takes both out. Release drops the deliveries and
// counts of the events the node no longer owns, and only those.
func TestSharedFanOutPendingUntilDelivered(t *testing.T) {
	ok := newReceiver(t, 0)
	down := newReceiver(t, 1<<30) // answers 500 until further notice
	a, sa := open(t, webhooks.Config{AllowPrivate: true})
	shared := newSharedCopy(t, []*webhooks.Service{a}, []*persistence.Store{sa})
	a.Share(shared.put)
	for _, rc := range []*receiver{ok, down} {
		_, err := a.Create("bu_1", webhooks.Input{URL: ptr(rc.srv.URL), EventTypes: []string{webhooks.HookRegistrationCreated}})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return len(a.List("bu_1")) == 2 }, 5*time.Second, 10*time.Millisecond)

	enqueueFor(t, sa, "evt_1", "h1")
	a.Wake()
	require.Eventually(t, func() bool { return len(ok.got()) == 1 && len(down.got()) >= 2 }, 10*time.Second, 10*time.Millisecond)
	// One delivery made, one retrying: the event is still owed.
	require.Equal(t, []string{"obx/hookfanout/s/evt_1/h1"}, keys(t, sa, "obx/hookfanout/"))
	require.Equal(t, []string{"whpend/evt_1/h1"}, keys(t, sa, "whpend/"))

	// The endpoint comes back: its delivery settles the event.
	down.mu.Lock()
	down.fail = 0
	down.mu.Unlock()
	require.Eventually(t, func() bool {
		return len(keys(t, sa, "obx/hookfanout/")) == 0 && len(keys(t, sa, "whpend/")) == 0
	}, 10*time.Second, 10*time.Millisecond, "settled once every endpoint got it")
	require.Len(t, ok.got(), 1, "the delivered endpoint got it once")

	// Two events pending on the down endpoint; the node keeps evt_2 only.
	down.mu.Lock()
	down.fail = 1 << 30
	down.mu.Unlock()
	h1 := enqueueFor(t, sa, "evt_1", "h2")
	enqueueFor(t, sa, "evt_2", "h3")
	a.Wake()
	require.Eventually(t, func() bool { return len(keys(t, sa, "whpend/")) == 2 && len(ok.got()) == 3 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, a.Release(func(ev string) bool { return ev == "evt_2" }))
	require.Equal(t, []string{"whpend/evt_2/h3"}, keys(t, sa, "whpend/"))
	for _, k := range keys(t, sa, "obx/webhooks/s/") {
		require.NotContains(t, k, "/evt_1/", "evt_1's deliveries dropped")
	}
	require.NotEmpty(t, keys(t, sa, "obx/webhooks/s/"), "evt_2's delivery kept")
	// Nothing more of evt_1 is sent from here.
	n := 0
	for _, c := range down.got() {
		if strings.Contains(string(c.body), h1.ID) {
			n++
		}
	}
	time.Sleep(200 * time.Millisecond)
	m := 0
	for _, c := range down.got() {
		if strings.Contains(string(c.body), h1.ID) {
			m++
		}
	}
	require.LessOrEqual(t, m, n+1, "at most the POST in flight")
}
