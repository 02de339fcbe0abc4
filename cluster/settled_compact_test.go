package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"ticketd/app"
	clusternode "ticketd/cluster/node"
)

// TestSettledCompacted: TICKETD_SETTLED does not keep a subject for every
// event that ever delivered something. Small events each deliver their
// ticket mails (every delivery marked on the event's settled subject),
// then stop changing; a busy event's orders move the shard on until the
// trimmer settles them (their state kept as a snapshot, their log
// trimmed through their last record): owing nothing, their settled
// subjects are purged. The owner is then stopped: the node that takes the
// events over lists every registration and sends none of their mails
// again.
func TestSettledCompacted(t *testing.T) {
	t.Parallel() // see parallelTests
	relay, box := startRelay(t)
	mails := box.domain
	nodes := startNodes(t, 3, func(c *app.Config) {
		c.SMTPAddr = relay.Addr
		c.SnapshotEvery = 20
		c.ClusterSnapshotTailMax = 20
		c.ClusterSettleLag = 100 // the least allowed
		c.Tune = &app.Tuning{Cluster: func(cc *clusternode.Config) {
			cc.Shards = 1 // every event on one shard, so the busy one moves the others' trim
			cc.SettleEvery = 200 * time.Millisecond
		}}
	})
	a := nodes[0]
	u := a.NewUnit("Small")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	const small, guests = 8, 3
	var events []string
	for i := range small {
		st, ev := retry503(t, func() (int, map[string]any) {
			return do(t, "POST", a.URL+"/v1/events", u.Secret, map[string]any{"name": fmt.Sprintf("Small %d", i), "timezone": "UTC", "startsAt": "2030-06-01T09:00:00Z"})
		})
		require.Equal(t, 201, st, "%v", ev)
		evt := ev["id"].(string)
		typeID := openFreeType(t, a.URL, u.Secret, evt)
		for g := range guests {
			st, r, _ := doIdemRetry(t, a.URL+"/v1/events/"+evt+"/registrations", u.Secret, fmt.Sprintf("small-%s-%d", evt, g),
				map[string]any{"email": fmt.Sprintf("g%d-%d@small.example", i, g), "registrationTypeId": typeID})
			require.Equal(t, 201, st, "%v", r)
		}
		events = append(events, evt)
	}
	eventually(t, 60*time.Second, "every small event's mails delivered", func() bool { n, _ := mails("small.example"); return n >= small*guests })

	settled := func() map[string]uint64 {
		s, err := a.Main.Node().JetStream().Stream(ctx, "TICKETD_SETTLED")
		require.NoError(t, err)
		in, err := s.Info(ctx, jetstream.WithSubjectFilter("settled.>"))
		require.NoError(t, err)
		return in.State.Subjects
	}
	eventually(t, 30*time.Second, "the small events' deliveries marked", func() bool {
		subj := settled()
		for _, evt := range events {
			if subj["settled."+evt] == 0 {
				return false
			}
		}
		return true
	})
	before := settled()
	t.Logf("settled subjects before the trim: %d", len(before))

	// A busy event moves the shard on: the trimmer settles the small ones.
	busy, busyType := sellableEvent(t, a, u.Secret, "Busy", 100_000)
	compacted := func() bool {
		subj := settled()
		for _, evt := range events {
			if subj["settled."+evt] > 0 {
				return false
			}
		}
		return true
	}
	orders := 0
	for ; !compacted(); orders++ {
		require.Less(t, orders, 3000, "the small events' settled subjects still there after %d orders: %v", orders, settled())
		for range 10 {
			st, o := do(t, "POST", a.URL+"/v1/events/"+busy+"/orders", u.Secret, map[string]any{"email": fmt.Sprintf("p%d@busy.example", orders),
				"items": []map[string]any{{"itemType": "registration_type", "itemId": busyType, "quantity": 1}}})
			require.Equal(t, 201, st, "%v", o)
			orders++
		}
	}
	after := settled()
	t.Logf("after %d orders of %s: settled subjects %d (%v)", orders, busy, len(after), after)
	// The busy event's own subject stays bounded by its rollups.
	require.LessOrEqual(t, after["settled."+busy], uint64(2*16), "the busy event's settled subject")

	// Nothing was lost by the purge: the owner goes, and the node taking
	// the small events over lists their registrations and mails no guest
	// twice.
	owner := ownerOf(t, a, events[0])
	var b *node
	for _, nd := range nodes {
		if nd.name == owner {
			b = nd
		}
	}
	require.NotNil(t, b)
	via := a
	if via == b {
		via = nodes[1]
	}
	require.NoError(t, b.Main.Close())
	for _, evt := range events {
		st, l := retry503(t, func() (int, map[string]any) {
			return do(t, "GET", via.URL+"/v1/events/"+evt+"/registrations?limit=100", u.Secret, nil)
		})
		require.Equal(t, 200, st, "%v", l)
		require.Len(t, l["data"], guests, "the registrations of %s", evt)
	}
	time.Sleep(3 * time.Second) // a mail imported again would go at once
	n, most := mails("small.example")
	require.Equal(t, small*guests, n, "no small event's mail sent again")
	require.Equal(t, 1, most)
}
