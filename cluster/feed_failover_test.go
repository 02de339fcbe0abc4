package cluster_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app"
	"ticketd/cluster/clustertest"
	clusternode "ticketd/cluster/node"
)

// readWholeFeed reads an event's feed from its first change through any
// node, page by page (a 503 while an owner activates is retried, as the
// contract tells clients to), and answers its entries in order.
func readWholeFeed(t *testing.T, nd *node, secret, evt string) []map[string]any {
	t.Helper()
	var out []map[string]any
	after := ""
	for range 1000 {
		u := nd.URL + "/v1/events/" + evt + "/changes?limit=1000"
		if after != "" {
			u += "&after=" + url.QueryEscape(after)
		}
		st, p := retry503(t, func() (int, map[string]any) { return do(t, "GET", u, secret, nil) })
		require.Equal(t, 200, st, "%s: %v", nd.name, p)
		for _, d := range p["data"].([]any) {
			out = append(out, d.(map[string]any))
		}
		after, _ = p["nextCursor"].(string)
		if more, _ := p["hasMore"].(bool); !more {
			return out
		}
	}
	t.Fatal("the feed did not end")
	return nil
}

// requireWholeFeed asserts got is the feed from seq 1 without a gap or a
// repeat, and holds want's entries first, alike (seq, type, object).
func requireWholeFeed(t *testing.T, want, got []map[string]any, what string) {
	t.Helper()
	for i, ch := range got {
		require.EqualValues(t, i+1, ch["seq"], "%s: entry %d", what, i)
	}
	require.GreaterOrEqual(t, len(got), len(want), "%s: entries lost", what)
	for i, w := range want {
		require.Equal(t, w["type"], got[i]["type"], "%s: seq %d", what, i+1)
		require.Equal(t, w["object"], got[i]["object"], "%s: seq %d", what, i+1)
		require.Equal(t, w["occurredAt"], got[i]["occurredAt"], "%s: seq %d", what, i+1)
	}
}

// feedEvent makes an event of a new unit through a whose owner is not a
// (it tries a few), opens a free ticket type, and answers the unit's
// secret, the event and the type.
func feedEvent(t *testing.T, a *node, name string) (secret, evt, typeID string) {
	u := a.NewUnit(name)
	for range 20 {
		st, ev := retry503(t, func() (int, map[string]any) {
			return do(t, "POST", a.URL+"/v1/events", u.Secret, map[string]any{"name": name, "timezone": "UTC", "startsAt": "2030-06-01T09:00:00Z"})
		})
		require.Equal(t, 201, st, "%v", ev)
		evt = ev["id"].(string)
		if owner := ownerOf(t, a, evt); owner != "" && owner != a.name {
			break
		}
	}
	return u.Secret, evt, openBigType(t, a.URL, u.Secret, evt)
}

// openBigType opens a free ticket type of 1,000 places and publishes evt.
func openBigType(t *testing.T, base, secret, evt string) string {
	t.Helper()
	st, tt := retry503(t, func() (int, map[string]any) {
		return do(t, "POST", base+"/v1/events/"+evt+"/ticket-types", secret, map[string]any{"name": "GA", "capacity": 1000, "priceAmount": 0})
	})
	require.Equal(t, 201, st, "%v", tt)
	typeID := tt["id"].(string)
	st, m := do(t, "PATCH", base+"/v1/events/"+evt+"/ticket-types/"+typeID, secret, map[string]any{"status": "open"})
	require.Equal(t, 200, st, "%v", m)
	st, m = do(t, "PATCH", base+"/v1/events/"+evt, secret, map[string]any{"status": "published"})
	require.Equal(t, 200, st, "%v", m)
	return typeID
}

// registerN registers n guests through nd (their emails from i0 on).
func registerN(t *testing.T, nd *node, secret, evt, typeID string, i0, n int) {
	t.Helper()
	for i := i0; i < i0+n; i++ {
		st, r := retry503(t, func() (int, map[string]any) {
			return do(t, "POST", nd.URL+"/v1/events/"+evt+"/registrations", secret,
				map[string]any{"email": fmt.Sprintf("g%d@example.com", i), "registrationTypeId": typeID})
		})
		require.Equal(t, 201, st, "%v", r)
	}
}

// scanBatch checks in the first k registrations of evt in one batch of a
// new device's scans through nd, and answers the feed entries it made.
func scanBatch(t *testing.T, nd *node, secret, evt string, k int) int {
	t.Helper()
	st, l := do(t, "GET", nd.URL+"/v1/events/"+evt+"/registrations?limit=100", secret, nil)
	require.Equal(t, 200, st, "%v", l)
	st, d := do(t, "POST", nd.URL+"/v1/events/"+evt+"/devices", secret, map[string]any{"name": "gate"})
	require.Equal(t, 201, st, "%v", d)
	st, key := do(t, "POST", nd.URL+"/door/v1/device/initialize", "", map[string]any{"setupCode": d["setupCode"]})
	require.Equal(t, 201, st, "%v", key)
	var list []map[string]any
	for i, r := range l["data"].([]any)[:k] {
		list = append(list, map[string]any{"scanId": fmt.Sprint("s", i), "registrationId": r.(map[string]any)["id"], "subjectType": "event",
			"scannedAt": time.Now().UTC().Format(time.RFC3339)})
	}
	st, res := retry503(t, func() (int, map[string]any) {
		return do(t, "POST", nd.URL+"/door/v1/scans", key["key"].(string), map[string]any{"scans": list})
	})
	require.Equal(t, 200, st, "%v", res)
	for _, r := range res["results"].([]any) {
		require.Equal(t, "admitted", r.(map[string]any)["verdict"])
	}
	return k
}

// loseOwner closes the owner of evt and answers a survivor once another
// node owns the event.
func loseOwner(t *testing.T, nodes []*node, evt string) (lost, survivor *node) {
	t.Helper()
	owner := ownerOf(t, nodes[0], evt)
	for _, nd := range nodes {
		if nd.name == owner {
			lost = nd
		}
	}
	require.NotNil(t, lost, "owner %q", owner)
	require.NoError(t, lost.Main.Close())
	for _, nd := range nodes {
		if nd != lost {
			survivor = nd
			break
		}
	}
	eventually(t, 60*time.Second, "a survivor owns the event", func() bool {
		o := ownerOf(t, survivor, evt)
		return o != "" && o != lost.name
	})
	return lost, survivor
}

// importsSeen passes a node's log to next (Info and above) and keeps the
// attributes of its feed imports' lines (at debug: settle.Feeds).
type importsSeen struct {
	next slog.Handler
	*seenImports
}

type seenImports struct {
	mu    sync.Mutex
	lines []map[string]any
}

func (h importsSeen) Enabled(context.Context, slog.Level) bool { return true }
func (h importsSeen) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "cluster: feed entries imported" {
		m := map[string]any{}
		r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.Any(); return true })
		h.mu.Lock()
		h.lines = append(h.lines, m)
		h.mu.Unlock()
	}
	if r.Level < slog.LevelInfo {
		return nil
	}
	return h.next.Handle(ctx, r)
}
func (h importsSeen) WithAttrs(as []slog.Attr) slog.Handler {
	return importsSeen{h.next.WithAttrs(as), h.seenImports}
}
func (h importsSeen) WithGroup(g string) slog.Handler {
	return importsSeen{h.next.WithGroup(g), h.seenImports}
}

// TestFeedSurvivesFailover: the change feed's entries reach only the
// owner's local store with its commits, yet after the owner is lost the
// new owner answers the whole feed from seq 1, every entry once and
// alike, and goes on from there without a gap (issue 35 item 4).
func TestFeedSurvivesFailover(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes := startNodes(t, 3)
	a := nodes[0]
	secret, evt, typeID := feedEvent(t, a, "Failover feed")
	registerN(t, a, secret, evt, typeID, 0, 30)
	before := readWholeFeed(t, a, secret, evt)
	require.Len(t, before, 30)

	lost, survivor := loseOwner(t, nodes, evt)
	t.Logf("%s lost; %s reads the feed", lost.name, survivor.name)
	after := readWholeFeed(t, survivor, secret, evt)
	requireWholeFeed(t, before, after, "after the failover")
	require.Len(t, after, 30)

	// The new owner's feed goes on from there.
	registerN(t, survivor, secret, evt, typeID, 30, 5)
	requireWholeFeed(t, before, readWholeFeed(t, survivor, secret, evt), "after more changes")
	require.Len(t, readWholeFeed(t, survivor, secret, evt), 35)
}

// TestFeedSurvivesTrimAndFailover: a log trimmed behind snapshots no
// longer holds the messages that carried the feed's first entries, yet
// the owner that takes the event over after a loss answers the whole
// feed from seq 1: the entries went to the replicated feed stream before
// the trim took their messages.
func TestFeedSurvivesTrimAndFailover(t *testing.T) {
	t.Parallel() // see parallelTests
	imports := &seenImports{}
	nodes := startNodes(t, 3, func(c *app.Config) {
		c.Logger = slog.New(importsSeen{clustertest.FailLog(t).Handler(), imports})
		c.SnapshotEvery = 20
		c.ClusterSnapshotTailMax = 20
		c.Tune = &app.Tuning{Cluster: func(cc *clusternode.Config) {
			cc.Shards = 1 // one shard: its first message is the event's
		}}
	})
	a := nodes[0]
	u := a.NewUnit("Trimmed feed")
	st, ev := retry503(t, func() (int, map[string]any) {
		return do(t, "POST", a.URL+"/v1/events", u.Secret, map[string]any{"name": "Trimmed", "timezone": "UTC", "startsAt": "2030-06-01T09:00:00Z"})
	})
	require.Equal(t, 201, st, "%v", ev)
	evt := ev["id"].(string)
	typeID := openBigType(t, a.URL, u.Secret, evt)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	firstSeq := func() uint64 {
		s, err := a.Main.Node().JetStream().Stream(ctx, "TICKETD_EV_0")
		require.NoError(t, err)
		in, err := s.Info(ctx)
		require.NoError(t, err)
		return in.State.FirstSeq
	}
	n := 0
	for firstSeq() <= 1 {
		registerN(t, a, u.Secret, evt, typeID, n, 10)
		n += 10
		require.Less(t, n, 400, "the log was not trimmed")
	}
	registerN(t, a, u.Secret, evt, typeID, n, 3)
	n += 3
	// A batch of door scans: its check-ins' entries are one span record
	// (actors/feed), carried and imported like any other.
	n += scanBatch(t, a, u.Secret, evt, 7)
	for firstSeq() <= 2 {
		registerN(t, a, u.Secret, evt, typeID, n, 10)
		n += 10
		require.Less(t, n, 800, "the log was not trimmed past the batch")
	}
	t.Logf("the log is trimmed to message %d after %d feed entries", firstSeq(), n)
	before := readWholeFeed(t, a, u.Secret, evt)
	require.Len(t, before, n)
	// The trimmed messages' entries went to the feed stream first.
	fs, err := a.Main.Node().JetStream().Stream(ctx, "TICKETD_FEED")
	require.NoError(t, err)
	_, err = fs.GetLastMsgForSubject(ctx, "feed."+evt)
	require.NoError(t, err, "the feed stream carries the event's entries")

	// The owner stops gracefully (loseOwner: app.Main.Close), handing
	// its shard over as a planned move: the taker prefetches the feed
	// (the stream's and the log tail's) while the owner serves on, writes
	// go on through another node, and the claim imports only the entries
	// of the messages after the prefetch's point.
	owner := ownerOf(t, a, evt)
	via := a
	for _, nd := range nodes {
		if nd.name != owner {
			via = nd
			break
		}
	}
	imports.mu.Lock()
	imports.lines = nil
	imports.mu.Unlock()
	stop := make(chan struct{})
	var wrote atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := n; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			registerN(t, via, u.Secret, evt, typeID, i, 1)
			wrote.Add(1)
			time.Sleep(20 * time.Millisecond)
		}
	})
	t0 := time.Now()
	lost, survivor := loseOwner(t, nodes, evt)
	close(stop)
	wg.Wait()
	n += int(wrote.Load())
	t.Logf("%s lost in %s, %d more feed entries meanwhile; %s reads the feed", lost.name, time.Since(t0), wrote.Load(), survivor.name)
	t0 = time.Now()
	after := readWholeFeed(t, survivor, u.Secret, evt)
	t.Logf("read in %s", time.Since(t0))
	requireWholeFeed(t, before, after, "after trim and failover")
	require.Len(t, after, n, "every entry once")
	imports.mu.Lock()
	lines := imports.lines
	imports.mu.Unlock()
	prefetched, claimed := false, false
	for _, l := range lines {
		t.Logf("feed import: %v", l)
		if l["claim"] == false && l["log_entries"].(uint64) > 0 {
			prefetched = true
		}
		if l["claim"] == true {
			claimed = true
			require.NotZero(t, l["log_after"], "the claim reads the log after the prefetch's point: %v", l)
		}
	}
	require.True(t, prefetched, "the taker's prefetch imported the log tail's entries")
	require.True(t, claimed, "the claim's import is logged")
}
