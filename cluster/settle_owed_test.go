package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app"
	clusternode "ticketd/cluster/node"
)

// TestStuckWebhookReleasesTrim: an event whose webhook cannot be
// delivered (its endpoint answers 500 for as long as the test runs) no
// longer holds its shard's log back: the trimmer settles it once another
// event's orders have moved the shard on, carrying the webhook to the
// settled stream, and the shard stream's first message moves past the
// event's. When its owner is then lost, the survivor that takes the
// event over imports the webhook from there (no message of the log puts
// it any more) and delivers it, once, when the endpoint is back.
func TestStuckWebhookReleasesTrim(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes := startNodes(t, 3, func(c *app.Config) {
		c.SnapshotEvery = 20
		c.ClusterSnapshotTailMax = 20
		c.ClusterSettleLag = 100 // the least allowed
		c.WebhookDisableAfter = 1000
		c.Tune = &app.Tuning{Cluster: func(cc *clusternode.Config) {
			cc.Shards = 1 // every event on one shard, so one moves the other's trim
			cc.SettleEvery = 200 * time.Millisecond
		}}
	})
	a := nodes[0]
	sink := &hookSink{down: true}
	u, _, _, secret := newHookEndpoint(t, a, sink)

	// The stuck event: one registration, whose webhook the owner tries
	// and cannot deliver.
	st, ev := retry503(t, func() (int, map[string]any) {
		return do(t, "POST", a.URL+"/v1/events", u.Secret, map[string]any{"name": "Stuck", "timezone": "UTC", "startsAt": "2030-06-01T09:00:00Z"})
	})
	require.Equal(t, 201, st, "%v", ev)
	evt := ev["id"].(string)
	typeID := openFreeType(t, a.URL, u.Secret, evt)
	st, r, _ := doIdemRetry(t, a.URL+"/v1/events/"+evt+"/registrations", u.Secret, "stuck-hook-"+evt,
		map[string]any{"email": "guest@example.com", "registrationTypeId": typeID})
	require.Equal(t, 201, st, "%v", r)
	eventually(t, 20*time.Second, "the owner tried the webhook", func() bool { return sink.triedFor(evt) >= 1 })
	owner := ownerOf(t, a, evt)
	var b *node
	for _, nd := range nodes {
		if nd.name == owner {
			b = nd
		}
	}
	require.NotNil(t, b, "owner %q", owner)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stream := func() (first, last uint64) {
		s, err := a.Main.Node().JetStream().Stream(ctx, "TICKETD_EV_0")
		require.NoError(t, err)
		in, err := s.Info(ctx)
		require.NoError(t, err)
		return in.State.FirstSeq, in.State.LastSeq
	}
	_, stuckLast := stream()

	// A busy event of a unit without endpoints: holds placed one by one
	// until the stream's first message is past the stuck event's last,
	// which never happens while the trimmer leaves an event that owes a
	// webhook alone.
	u2 := a.NewUnit("Busy")
	busy, busyType := sellableEvent(t, a, u2.Secret, "Busy", 100_000)
	var first, last uint64
	for i := 0; ; i++ {
		st, o := do(t, "POST", a.URL+"/v1/events/"+busy+"/orders", u2.Secret, map[string]any{"email": fmt.Sprintf("p%d@example.com", i),
			"items": []map[string]any{{"itemType": "registration_type", "itemId": busyType, "quantity": 1}}})
		require.Equal(t, 201, st, "%v", o)
		if i%10 != 0 {
			continue
		}
		if first, last = stream(); first > stuckLast {
			t.Logf("after %d holds on %s: the stream is %d..%d, past %s's last message %d", i+1, busy, first, last, evt, stuckLast)
			break
		}
		require.Less(t, i, 2000, "the stream's first message %d is still at or before %s's last %d (last %d)", first, evt, stuckLast, last)
	}
	require.Zero(t, sink.signedFor(t, evt, secret), "the endpoint is still down")

	// The owner is lost; the survivor that takes the event over has the
	// webhook pending, and delivers it once the endpoint is back.
	require.NoError(t, b.Main.Close())
	var survivor string
	eventually(t, 60*time.Second, "a survivor owns the event", func() bool {
		for _, nd := range nodes {
			if nd != b {
				survivor = ownerOf(t, nd, evt)
				return survivor != "" && survivor != b.name
			}
		}
		return false
	})
	sink.setDown(false)
	eventually(t, 60*time.Second, "the webhook delivered by "+survivor, func() bool { return sink.signedFor(t, evt, secret) >= 1 })
	time.Sleep(3 * time.Second)
	// Each of the registration's webhooks (created, confirmed) once.
	delivered := map[string]int{}
	sink.mu.Lock()
	for _, d := range sink.got {
		var body struct{ ID, Type string }
		require.NoError(t, json.Unmarshal(d.body, &body))
		if d.ok && strings.Contains(string(d.body), evt) {
			delivered[body.Type]++
		}
	}
	sink.mu.Unlock()
	require.Equal(t, 1, delivered["registration.created"], "%v", delivered)
	for typ, n := range delivered {
		require.Equal(t, 1, n, "%s delivered once", typ)
	}
	t.Logf("%s lost with the webhook pending and its puts trimmed; delivered by %s", b.name, survivor)
}
