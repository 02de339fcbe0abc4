package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app"
)

// importLog keeps the lines of the feed imports the nodes log (at debug;
// everything else is dropped).
type importLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *importLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *importLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "cluster: feed entries imported" {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.buf, "%s %s", r.Time.UTC().Format("15:04:05.000"), r.Message)
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&l.buf, " %s=%v", a.Key, a.Value); return true })
	l.buf.WriteByte('\n')
	return nil
}
func (l *importLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *importLog) WithGroup(string) slog.Handler      { return l }

// TestFeedImportTime times the failover of an event with a large feed
// (TICKETD_FEED_IMPORT_N registrations, default 10,000): its owner is
// closed and a survivor claims it, importing the whole feed (settle.Feeds.
// Import) before it answers; the test reports how long until the first
// page is answered and the whole feed is read, with the import's own
// timing from the log. A measurement (issue 35): it runs only when
// TICKETD_CLUSTER_BENCH=1.
func TestFeedImportTime(t *testing.T) {
	if os.Getenv("TICKETD_CLUSTER_BENCH") == "" {
		t.Skip("set TICKETD_CLUSTER_BENCH=1")
	}
	n := 10_000
	if v, err := strconv.Atoi(os.Getenv("TICKETD_FEED_IMPORT_N")); err == nil && v > 0 {
		n = v
	}
	logs := &importLog{}
	nodes := startNodes(t, 3, func(c *app.Config) { c.Logger = slog.New(logs) })
	a := nodes[0]
	secret, evt, _ := feedEvent(t, a, "Import feed")
	st, tt := retry503(t, func() (int, map[string]any) {
		return do(t, "POST", a.URL+"/v1/events/"+evt+"/ticket-types", secret, map[string]any{"name": "Big", "capacity": n + 10, "priceAmount": 0})
	})
	require.Equal(t, 201, st, "%v", tt)
	typeID := tt["id"].(string)
	st, m := do(t, "PATCH", a.URL+"/v1/events/"+evt+"/ticket-types/"+typeID, secret, map[string]any{"status": "open"})
	require.Equal(t, 200, st, "%v", m)

	t0 := time.Now()
	var next, bad atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nd := nodes[g%len(nodes)]
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				st, _ := retry503(t, func() (int, map[string]any) {
					return do(t, "POST", nd.URL+"/v1/events/"+evt+"/registrations", secret,
						map[string]any{"email": fmt.Sprintf("imp%d@example.com", i), "registrationTypeId": typeID})
				})
				if st != 201 {
					bad.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	require.Zero(t, bad.Load())
	t.Logf("%d registrations in %s", n, time.Since(t0).Round(time.Millisecond))
	before := readWholeFeed(t, a, secret, evt)
	require.GreaterOrEqual(t, len(before), n)

	t1 := time.Now()
	lost, survivor := loseOwner(t, nodes, evt)
	owned := time.Since(t1)
	st, p := retry503(t, func() (int, map[string]any) {
		return do(t, "GET", survivor.URL+"/v1/events/"+evt+"/changes?limit=1", secret, nil)
	})
	require.Equal(t, 200, st, "%v", p)
	first := time.Since(t1)
	after := readWholeFeed(t, survivor, secret, evt)
	whole := time.Since(t1)
	requireWholeFeed(t, before, after, "after the failover")
	logs.mu.Lock()
	imports := logs.buf.String()
	logs.mu.Unlock()
	t.Logf("%s lost with %d feed entries; %s owns the event after %s; first page after %s; whole feed read after %s\nimports logged:\n%s",
		lost.name, len(before), survivor.name, owned.Round(time.Millisecond), first.Round(time.Millisecond), whole.Round(time.Millisecond), imports)
}
