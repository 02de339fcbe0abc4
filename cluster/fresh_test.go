package cluster_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app"
	"ticketd/app/apptest"
	"ticketd/internal/testaddr"
)

// flood places orders of one event from clients spread over nodes until
// stopped, and counts the acknowledged ones per second since its start.
type flood struct {
	start   time.Time
	mu      sync.Mutex
	perSec  []int
	last    time.Time
	maxGap  time.Duration
	gapAt   time.Duration // when the longest gap began, since start
	status  map[int]int
	stop    atomic.Bool
	wg      sync.WaitGroup
	n       atomic.Int64
	firstOK atomic.Int64 // ns since start of the first acknowledged order, 0: none yet
}

var floodClient = &nethttp.Client{Timeout: 30 * time.Second, Transport: &nethttp.Transport{MaxIdleConnsPerHost: 64}}

func startFlood(urls []string, token, evt, typeID string, clients int) *flood {
	f := &flood{start: time.Now(), status: map[int]int{}}
	f.last = f.start
	for c := range clients {
		base := urls[c%len(urls)]
		f.wg.Go(func() {
			for !f.stop.Load() {
				b, _ := json.Marshal(map[string]any{"email": fmt.Sprintf("f%d-%d@example.com", c, f.n.Add(1)),
					"items": []map[string]any{{"itemType": "registration_type", "itemId": typeID, "quantity": 1}}})
				req, _ := nethttp.NewRequest("POST", base+"/v1/events/"+evt+"/orders", bytes.NewReader(b))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", fmt.Sprintf("%s-%d-%d", evt, c, f.n.Load()))
				st := -1
				if resp, err := floodClient.Do(req); err == nil {
					st = resp.StatusCode
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				now := time.Now()
				f.mu.Lock()
				f.status[st]++
				if st == 201 {
					sec := int(now.Sub(f.start) / time.Second)
					for len(f.perSec) <= sec {
						f.perSec = append(f.perSec, 0)
					}
					f.perSec[sec]++
					if g := now.Sub(f.last); g > f.maxGap {
						f.maxGap, f.gapAt = g, f.last.Sub(f.start)
					}
					f.last = now
					f.firstOK.CompareAndSwap(0, int64(now.Sub(f.start)))
				}
				f.mu.Unlock()
				if st != 201 {
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	return f
}

// end stops the flood and answers the acknowledged orders per second, the
// longest time without one (from the flood's start, so a slow first order
// counts) and when it began, and the statuses.
func (f *flood) end() (perSec []int, gap, gapAt time.Duration, status map[int]int) {
	f.stop.Store(true)
	f.wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	if g := time.Since(f.last); g > f.maxGap {
		f.maxGap, f.gapAt = g, f.last.Sub(f.start)
	}
	return f.perSec, f.maxGap, f.gapAt, f.status
}

func perSecString(p []int) string {
	s := make([]string, len(p))
	for i, n := range p {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, " ")
}

// freshWithin bounds, in a new cluster, the wait for the first
// acknowledged order and the longest gap between two: the contract is that
// a cluster writes from its first second after ready, and that no planned
// move (the leaders' spreading a new cluster may make) stops writes for a
// second. Measured 20-160 ms on a loaded 2-core machine.
const freshWithin = time.Second

// TestFreshClusterWritesAtOnce: a cluster that has just become ready (no
// wait for the leaders' spreading), a new event, 12 clients spread over
// the three nodes, each order with an Idempotency-Key of its own: the
// first order is acknowledged within freshWithin, and writes never stop
// longer. Issue 31, finding 10: the first 10-12 s acknowledged 12 orders
// in all; every keyed request waited for the idempotency keys' stream,
// which the nodes created at once on their first keyed request, and
// nats-server answered none of the concurrent creations: 503 after 10 s.
func TestFreshClusterWritesAtOnce(t *testing.T) {
	addrs := testaddr.Free(t, 3)
	peers := strings.Join(addrs, ",")
	nodes := make([]*node, 3)
	var wg sync.WaitGroup
	for i := range nodes {
		name := fmt.Sprintf("n%d", i+1)
		wg.Go(func() {
			nodes[i] = &node{name: name, Service: apptest.Start(t, func(c *app.Config) {
				c.NodeName, c.ClusterAddr, c.ClusterPeers = name, addrs[i], peers
			})}
		})
	}
	wg.Wait()
	for _, nd := range nodes {
		eventually(t, 60*time.Second, nd.name+" ready", func() bool {
			st, _ := do(t, "GET", nd.URL+"/readyz", "", nil)
			return st == 200
		})
	}
	readyAt := time.Now()
	a := nodes[0]
	u := a.NewUnit("Fresh")
	st, ev := do(t, "POST", a.URL+"/v1/events", u.Secret, map[string]any{"name": "Drop", "timezone": "UTC", "startsAt": "2030-06-01T09:00:00Z"})
	require.Equal(t, 201, st, "%v", ev)
	evt := ev["id"].(string)
	st, tt := do(t, "POST", a.URL+"/v1/events/"+evt+"/ticket-types", u.Secret, map[string]any{"name": "GA", "capacity": 1_000_000, "priceAmount": 0})
	require.Equal(t, 201, st, "%v", tt)
	typeID := tt["id"].(string)
	st, _ = do(t, "PATCH", a.URL+"/v1/events/"+evt+"/ticket-types/"+typeID, u.Secret, map[string]any{"status": "open"})
	require.Equal(t, 200, st)
	st, _ = do(t, "PATCH", a.URL+"/v1/events/"+evt, u.Secret, map[string]any{"status": "published"})
	require.Equal(t, 200, st)
	t.Logf("event %s ready to sell %s after the nodes were ready, owner %s", evt, time.Since(readyAt).Round(time.Millisecond), ownerOf(t, a, evt))

	urls := []string{nodes[0].URL, nodes[1].URL, nodes[2].URL}
	f := startFlood(urls, u.Secret, evt, typeID, 12)
	time.Sleep(12 * time.Second)
	perSec, gap, gapAt, status := f.end()
	first := time.Duration(f.firstOK.Load())
	t.Logf("acknowledged per second: %s", perSecString(perSec))
	t.Logf("longest write gap %s from %s, first order after %s (%s after ready), statuses %v, owner %s",
		gap.Round(time.Millisecond), gapAt.Round(time.Millisecond), first.Round(time.Millisecond),
		f.start.Add(first).Sub(readyAt).Round(time.Millisecond), status, ownerOf(t, a, evt))
	require.NotZero(t, first, "no order acknowledged")
	require.Less(t, first, freshWithin, "the first order of a new cluster")
	require.Less(t, gap, freshWithin, "the longest write gap of a new cluster")
	require.Equal(t, 0, status[503]+status[-1], "no order refused: %v", status)
}

// TestGracefulStopHandsOver: the owner of an event stopped gracefully
// (app.Main.Close, as on SIGTERM in a rolling restart) hands its shards
// over as planned moves before it closes: a flood of keyed orders through
// the other two nodes pauses under freshWithin, next to nothing is refused, and
// every acknowledged order is listed by the new owner.
func TestGracefulStopHandsOver(t *testing.T) {
	nodes := startNodes(t, 3)
	a := nodes[0]
	u := a.NewUnit("Rolling")
	var evt string
	var own *node
	for own == nil || own == a {
		st, ev := do(t, "POST", a.URL+"/v1/events", u.Secret, map[string]any{"name": "Drop", "timezone": "UTC", "startsAt": "2030-06-01T09:00:00Z"})
		require.Equal(t, 201, st, "%v", ev)
		evt = ev["id"].(string)
		name := ownerOf(t, a, evt)
		for _, nd := range nodes {
			if nd.name == name {
				own = nd
			}
		}
	}
	st, tt := do(t, "POST", a.URL+"/v1/events/"+evt+"/ticket-types", u.Secret, map[string]any{"name": "GA", "capacity": 1_000_000, "priceAmount": 0})
	require.Equal(t, 201, st, "%v", tt)
	typeID := tt["id"].(string)
	st, _ = do(t, "PATCH", a.URL+"/v1/events/"+evt+"/ticket-types/"+typeID, u.Secret, map[string]any{"status": "open"})
	require.Equal(t, 200, st)
	st, _ = do(t, "PATCH", a.URL+"/v1/events/"+evt, u.Secret, map[string]any{"status": "published"})
	require.Equal(t, 200, st)

	var urls []string
	for _, nd := range nodes {
		if nd != own {
			urls = append(urls, nd.URL)
		}
	}
	f := startFlood(urls, u.Secret, evt, typeID, 8)
	time.Sleep(2 * time.Second)
	stopping := time.Now()
	require.NoError(t, own.Main.Close())
	stopped := time.Since(stopping)
	time.Sleep(3 * time.Second)
	perSec, gap, gapAt, status := f.end()
	next := ownerOf(t, a, evt)
	t.Logf("owner %s stopped in %s; %s owns %s now; acknowledged per second: %s", own.name, stopped.Round(time.Millisecond), next, evt, perSecString(perSec))
	t.Logf("longest write gap %s from %s (the stop began at %s; the flood began at %s), statuses %v",
		gap.Round(time.Millisecond), gapAt.Round(time.Millisecond), stopping.Sub(f.start).Round(time.Millisecond),
		f.start.UTC().Format("15:04:05.000"), status)
	require.NotEqual(t, own.name, next)
	require.Less(t, gap, freshWithin, "a graceful stop's write gap")
	// A request caught at the instant the shard changes hands can still be
	// answered 503 UNAVAILABLE with Retry-After (its keyed retry is safe);
	// seen once in 3,811 under CI load (2026-11-29). More than a few is a
	// handover that refuses instead of pausing.
	require.LessOrEqual(t, status[503], 3, "orders refused during the handover: %v", status)
	// Every order acknowledged is there (ids listed through the new owner).
	acked := 0
	for _, n := range perSec {
		acked += n
	}
	listed := 0
	for cursor := ""; ; {
		list := a.URL + "/v1/events/" + evt + "/orders?limit=100"
		if cursor != "" {
			list += "&cursor=" + url.QueryEscape(cursor)
		}
		st, page := do(t, "GET", list, u.Secret, nil)
		require.Equal(t, 200, st, "%v", page)
		listed += len(page["data"].([]any))
		next, _ := page["nextCursor"].(string)
		if more, _ := page["hasMore"].(bool); !more || next == "" {
			break
		}
		cursor = next
	}
	require.Equal(t, acked, listed, "every acknowledged order listed")
}
