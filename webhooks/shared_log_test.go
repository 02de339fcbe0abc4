package webhooks_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/persistence"
	"ticketd/webhooks"
)

// sharedCopy applies what Share puts to every node's store in the order
// put, from one goroutine, then tells each node's Service: what the
// cluster's shared index does, over real Pebble stores.
type sharedCopy struct {
	entries chan [2][]byte
	done    chan struct{}
}

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
	t.Cleanup(func() { close(c.entries); <-c.done })
	return c
}

func (c *sharedCopy) put(_ context.Context, key, value []byte, _ time.Duration) error {
	c.entries <- [2][]byte{append([]byte(nil), key...), append([]byte(nil), value...)}
	return nil
}

// TestSharedDeliveryLog: with Share, the deliveries one node makes are
// listed on another, each node keeping the newest LogMax, and can be sent
// again through the other; the endpoint's deletion through the other
// drops the log on both.
func TestSharedDeliveryLog(t *testing.T) {
	rc := newReceiver(t, 0)
	a, sa := open(t, webhooks.Config{LogMax: 3})
	b, sb := open(t, webhooks.Config{LogMax: 3})
	shared := newSharedCopy(t, []*webhooks.Service{a, b}, []*persistence.Store{sa, sb})
	a.Share(shared.put)
	b.Share(shared.put)

	ep, err := b.Create("bu_1", webhooks.Input{URL: ptr(rc.srv.URL), EventTypes: []string{actors.HookRegistrationCreated}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, err := a.Get("bu_1", ep.ID); return err == nil }, 5*time.Second, 10*time.Millisecond)
	for i := range 5 {
		enqueue(t, sa, string(rune('a'+i)), "bu_1", actors.HookRegistrationCreated)
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
