package cluster_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app"
	clusternode "ticketd/cluster/node"
	"ticketd/mail"
)

// TestDropMailsSurviveTrim: a drop's 1,500 registrations owe a ticket
// mail each while the relay refuses them all (greylisted); the event's
// own snapshots (every 100 changes) trim its log as it sells, so the
// messages that put most of those mails are purged. The owner is then
// lost; the survivor that takes the event over sends every mail, once,
// when the relay takes them again. Before, a snapshot's trim carried at
// most 1,000 owed entries and went on without the rest: the mails put
// by the messages it trimmed once more than 1,000 were owed never went.
func TestDropMailsSurviveTrim(t *testing.T) {
	t.Parallel() // see parallelTests
	relay, box := startRelay(t)
	relay.Greylist("drop.example", true)
	nodes := startNodes(t, 3, func(c *app.Config) {
		c.SMTPAddr = relay.Addr
		c.SnapshotEvery = 100
		c.ClusterSnapshotTailMax = 100
		c.Tune = &app.Tuning{
			Mail: func(mc *mail.Config) {
				// Tried once while greylisted, then not before the
				// owner is lost; a new owner sends its imports at once.
				mc.RetryMin, mc.RetryMax = time.Minute, time.Minute
				mc.BackoffMin, mc.BackoffMax = 100*time.Millisecond, 500*time.Millisecond
			},
			Cluster: func(cc *clusternode.Config) { cc.Shards = 1 },
		}
	})
	a := nodes[0]
	u := a.NewUnit("Drop")
	evt, typeID := sellableEvent(t, a, u.Secret, "Drop", 100_000)
	owner := ownerOf(t, a, evt)
	var b *node
	for _, nd := range nodes {
		if nd.name == owner {
			b = nd
		}
	}
	require.NotNil(t, b, "owner %q", owner)
	if a == b {
		a = nodes[1] // the one asked once the owner is lost
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stream := func() (first, last uint64) {
		s, err := b.Main.Node().JetStream().Stream(ctx, "TICKETD_EV_0")
		require.NoError(t, err)
		in, err := s.Info(ctx)
		require.NoError(t, err)
		return in.State.FirstSeq, in.State.LastSeq
	}
	// Registrations through the owner, 8 at a time.
	var n atomic.Int64
	register := func(count int) {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for {
					i := n.Add(1)
					if i > int64(count) {
						return
					}
					st, r, _ := doIdemRetry(t, b.URL+"/v1/events/"+evt+"/registrations", u.Secret, fmt.Sprintf("drop-%s-%d", evt, i),
						map[string]any{"email": fmt.Sprintf("guest%d@drop.example", i), "registrationTypeId": typeID})
					require.Equal(t, 201, st, "%v", r)
				}
			})
		}
		wg.Wait()
		n.Store(int64(count))
	}
	const drop = 1_500
	register(drop)
	_, dropLast := stream()
	// Sell on until the owner's snapshots trimmed the log past the
	// drop's messages.
	total := drop
	for first, last := stream(); first <= dropLast; first, last = stream() {
		require.Less(t, total, drop+1_000, "the stream is %d..%d, not past the drop's last message %d", first, last, dropLast)
		total += 50
		register(total)
	}
	eventually(t, 20*time.Second, "every mail tried once", func() bool {
		for i := 1; i <= total; i++ {
			if len(relay.Tries(fmt.Sprintf("guest%d@drop.example", i))) == 0 {
				return false
			}
		}
		return true
	})
	require.Zero(t, box.recipients(), "none delivered while greylisted")

	// The owner is lost; the relay takes mail again.
	require.NoError(t, b.Main.Close())
	eventually(t, 60*time.Second, "a survivor owns the event", func() bool {
		o := ownerOf(t, a, evt)
		return o != "" && o != b.name
	})
	relay.Greylist("drop.example", false)
	delivered := box.recipients
	for end := time.Now().Add(60 * time.Second); delivered() < total && time.Now().Before(end); {
		time.Sleep(200 * time.Millisecond)
	}
	require.Equal(t, total, delivered(), "the mails delivered by the new owner")
	time.Sleep(2 * time.Second)
	for i := 1; i <= total; i++ {
		require.Equal(t, 1, box.to(fmt.Sprintf("guest%d@drop.example", i)), "guest %d's mail sent once", i)
	}
	t.Logf("%d mails owed while the relay refused them, the log trimmed past the drop's %d; all sent by the new owner", total, drop)
}
