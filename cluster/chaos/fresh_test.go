package chaos

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// startProcs starts n ticketd processes forming one cluster on fresh data
// dirs under root.
func startProcs(t *testing.T, n int) []*proc {
	t.Helper()
	procs := make([]*proc, n)
	var caddrs []string
	for range procs {
		caddrs = append(caddrs, freeAddr(t))
	}
	root := t.TempDir()
	for i := range procs {
		procs[i] = &proc{name: fmt.Sprintf("n%d", i+1), httpAddr: freeAddr(t), clusterAddr: caddrs[i],
			dir: filepath.Join(root, fmt.Sprintf("n%d", i+1)), log: filepath.Join(root, fmt.Sprintf("n%d.log", i+1)),
			peers: strings.Join(caddrs, ",")}
		procs[i].start(t)
	}
	t.Cleanup(func() {
		for _, p := range procs {
			p.kill()
		}
		// Kept whether it passed or not: a gap that passed is worth
		// reading too (which wait held the new owner, which node decided a
		// retry and when it imported the event's records).
		keep, _ := os.MkdirTemp("", "ticketd-cluster-chaos-logs")
		for _, p := range procs {
			b, _ := os.ReadFile(p.log)
			_ = os.WriteFile(filepath.Join(keep, p.name+".log"), b, 0o600)
		}
		t.Logf("the nodes' logs are kept in %s", keep)
	})
	return procs
}

// newUnit creates a unit and its secret key through front and answers
// the key.
func newUnit(t *testing.T, front *proc, name string) string {
	t.Helper()
	st, unit, err := call("POST", front.url()+"/admin/v1/business-units", adminToken, map[string]any{"name": name})
	require.NoError(t, err)
	require.Equal(t, 201, st, "%v", unit)
	st, key, err := call("POST", front.url()+"/admin/v1/business-units/"+unit["id"].(string)+"/api-keys", adminToken, map[string]any{"type": "secret"})
	require.NoError(t, err)
	require.Equal(t, 201, st, "%v", key)
	return key["key"].(string)
}

// sellableEvent creates a published event with one open free ticket type
// through front.
func sellableEvent(t *testing.T, front *proc, sk string) sale {
	t.Helper()
	st, ev, err := call("POST", front.url()+"/v1/events", sk, map[string]any{"name": "Drop", "timezone": "UTC", "startsAt": "2030-06-01T09:00:00Z"})
	require.NoError(t, err)
	require.Equal(t, 201, st, "%v", ev)
	evt := ev["id"].(string)
	st, tt, err := call("POST", front.url()+"/v1/events/"+evt+"/ticket-types", sk, map[string]any{"name": "GA", "capacity": 1_000_000, "priceAmount": 0})
	require.NoError(t, err)
	require.Equal(t, 201, st, "%v", tt)
	typeID := tt["id"].(string)
	st, _, _ = call("PATCH", front.url()+"/v1/events/"+evt+"/ticket-types/"+typeID, sk, map[string]any{"status": "open"})
	require.Equal(t, 200, st)
	st, _, _ = call("PATCH", front.url()+"/v1/events/"+evt, sk, map[string]any{"status": "published"})
	require.Equal(t, 200, st)
	return sale{evt, typeID}
}

// plannedWithin is the contract of a planned move (a leader's handover:
// the leaders' spreading, a graceful stop) and of a new cluster: an
// event's writes never stop that long.
const plannedWithin = time.Second

// TestClusterFresh: three processes started together, a new event made
// as soon as every node is ready, 12 clients spread over the nodes: the
// first order is acknowledged within a second, and writes never stop for
// a second or more.
func TestClusterFresh(t *testing.T) {
	procs := startProcs(t, 3)
	for _, p := range procs {
		waitFor(t, 90*time.Second, p.name+" ready", func() bool { return ready(p) })
	}
	readyAt := time.Now()
	sk := newUnit(t, procs[0], "Fresh")
	drop := sellableEvent(t, procs[0], sk)
	evt := drop.evt
	t.Logf("event %s sellable %s after ready, owner %s", evt, time.Since(readyAt).Round(time.Millisecond), owner(procs[0], evt))
	var urls []string
	for _, p := range procs {
		urls = append(urls, p.url())
	}
	l := newLoad(true)
	l.runSpread(urls, sk, []sale{drop}, 12)
	time.Sleep(20 * time.Second)
	l.stop.Store(true)
	l.wg.Wait()
	t.Logf("acknowledged per second: %s", l.perSecond())
	for _, e := range l.errs {
		t.Logf("failed: %s", e)
	}
	n, status, gap := l.phase()
	t.Logf("FRESH acknowledged %d, statuses %v, longest write gap %s, first order after %s, owner %s",
		n, status, gap.Round(time.Millisecond), l.first.Round(time.Millisecond), owner(procs[0], evt))
	require.NotZero(t, l.first, "no order acknowledged")
	require.Less(t, l.first, plannedWithin, "the first order of a new cluster")
	require.Less(t, gap, plannedWithin, "the longest write gap of a new cluster")
	require.Zero(t, status[503], "orders refused 503: %v", l.errs)
}

// stopWithin bounds a graceful stop: routing.LeaveBound (3 min 10 s, the
// handovers while their takers progress, then the quorum wait) and the
// shutdown's 9 s, the stop timeout the README advises.
const stopWithin = 210 * time.Second

// stop ends p with SIGTERM (a graceful stop) and waits for it to exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopWithin):
		t.Fatalf("%s did not stop within %s of SIGTERM", p.name, stopWithin)
	}
}

// TestClusterRollingRestart: a live drop (12 clients spread over the
// nodes) while each node in turn is stopped gracefully, started again and
// given its shards back (the leaders' spreading): the event's writes never
// stop for a second, and every acknowledged order is kept.
func TestClusterRollingRestart(t *testing.T) {
	procs := startProcs(t, 3)
	for _, p := range procs {
		waitFor(t, 90*time.Second, p.name+" ready", func() bool { return ready(p) })
	}
	sk := newUnit(t, procs[0], "Fresh")
	// One event per shard (three, the default, spread one per node): a
	// shard's move moves one of them. Owners read while a new cluster's
	// leaders still move can name two nodes for one shard: the choice is
	// made again from the current owners until three events have three
	// owners twice, 6 s apart.
	var sales, made []sale
	pick := func() []sale {
		byOwner := map[string]sale{}
		for _, s := range made {
			if o := owner(procs[0], s.evt); o != "" {
				byOwner[o] = s
			}
		}
		var out []sale
		for _, s := range byOwner {
			out = append(out, s)
		}
		return out
	}
	waitFor(t, 120*time.Second, "an event owned by each node", func() bool {
		made = append(made, sellableEvent(t, procs[0], sk))
		if sales = pick(); len(sales) < len(procs) {
			return false
		}
		time.Sleep(6 * time.Second)
		seen := map[string]bool{}
		for _, s := range sales {
			seen[owner(procs[0], s.evt)] = true
		}
		delete(seen, "")
		return len(seen) == len(procs)
	})
	var urls []string
	for _, p := range procs {
		urls = append(urls, p.url())
	}
	l := newLoad(true)
	l.runSpread(urls, sk, sales, 12)
	defer func() { l.stop.Store(true); l.wg.Wait() }()
	time.Sleep(3 * time.Second)
	l.phase()
	var gaps []time.Duration
	for _, p := range procs {
		var up *proc
		for _, q := range procs {
			if q != p {
				up = q
			}
		}
		ownersNow := func() string {
			var s []string
			for _, x := range sales {
				s = append(s, owner(up, x.evt))
			}
			return strings.Join(s, ",")
		}
		before := ownersNow()
		load := loadAvg()
		p.stop(t)
		stopped := time.Now()
		time.Sleep(2 * time.Second)
		mid := ownersNow()
		_, _, gapStop := l.phase()
		l.mu.Lock()
		t.Logf("restart %s: the longest gap while it stopped began at %s (event %s)", p.name, l.lastGapFrom.UTC().Format("15:04:05.000"), l.gapEvt)
		l.mu.Unlock()
		p.start(t)
		waitFor(t, 90*time.Second, p.name+" back", func() bool { return ready(p) })
		back := time.Since(stopped)
		time.Sleep(12 * time.Second) // the restarted node gets its shards back
		_, status, gapBack := l.phase()
		t.Logf("restart %s: owners %s, %s while it was down, %s after; longest write gap %s while stopping, %s while it took its shards back (up after %s); statuses %v; load %s at the stop, %s now",
			p.name, before, mid, ownersNow(), gapStop.Round(time.Millisecond), gapBack.Round(time.Millisecond), back.Round(time.Millisecond), status, load, loadAvg())
		l.mu.Lock()
		t.Logf("restart %s: the longest gap while it took its shards back began at %s (event %s)", p.name, l.lastGapFrom.UTC().Format("15:04:05.000"), l.gapEvt)
		l.mu.Unlock()
		gaps = append(gaps, gapStop, gapBack)
	}
	l.stop.Store(true)
	l.wg.Wait()
	acked := l.ackedCopy()
	got := map[string]bool{}
	for _, x := range sales {
		maps.Copy(got, listOrders(t, procs[0].url(), sk, x.evt, len(acked)))
	}
	lost := 0
	for id := range acked {
		if !got[id] {
			lost++
		}
	}
	t.Logf("acknowledged per second: %s", l.perSecond())
	t.Logf("ROLLING acknowledged %d, lost %d, longest write gaps %v", len(acked), lost, gaps)
	require.Zero(t, lost, "acknowledged orders lost")
	for _, g := range gaps {
		require.Less(t, g, plannedWithin, "a planned move's write gap")
	}
}
