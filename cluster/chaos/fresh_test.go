package chaos

import (
	"fmt"
	"path/filepath"
	"strings"
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
		if t.Failed() {
			for _, p := range procs {
				t.Logf("%s's log: %s", p.name, p.log)
			}
		}
	})
	return procs
}

// sellableEvent creates a unit, its secret key and a published event with
// one open free ticket type through front, and answers the key, the
// event and the ticket type.
func sellableEvent(t *testing.T, front *proc) (sk, evt, typeID string) {
	t.Helper()
	st, unit, err := call("POST", front.url()+"/admin/v1/business-units", adminToken, map[string]any{"name": "Fresh"})
	require.NoError(t, err)
	require.Equal(t, 201, st, "%v", unit)
	st, key, err := call("POST", front.url()+"/admin/v1/business-units/"+unit["id"].(string)+"/api-keys", adminToken, map[string]any{"type": "secret"})
	require.NoError(t, err)
	require.Equal(t, 201, st, "%v", key)
	sk = key["key"].(string)
	st, ev, err := call("POST", front.url()+"/v1/events", sk, map[string]any{"name": "Drop", "timezone": "UTC", "startsAt": "2030-06-01T09:00:00Z"})
	require.NoError(t, err)
	require.Equal(t, 201, st, "%v", ev)
	evt = ev["id"].(string)
	st, tt, err := call("POST", front.url()+"/v1/events/"+evt+"/ticket-types", sk, map[string]any{"name": "GA", "capacity": 1_000_000, "priceAmount": 0})
	require.NoError(t, err)
	require.Equal(t, 201, st, "%v", tt)
	typeID = tt["id"].(string)
	st, _, _ = call("PATCH", front.url()+"/v1/events/"+evt+"/ticket-types/"+typeID, sk, map[string]any{"status": "open"})
	require.Equal(t, 200, st)
	st, _, _ = call("PATCH", front.url()+"/v1/events/"+evt, sk, map[string]any{"status": "published"})
	require.Equal(t, 200, st)
	return sk, evt, typeID
}

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
	sk, evt, typeID := sellableEvent(t, procs[0])
	t.Logf("event %s sellable %s after ready, owner %s", evt, time.Since(readyAt).Round(time.Millisecond), owner(procs[0], evt))
	var urls []string
	for _, p := range procs {
		urls = append(urls, p.url())
	}
	l := &load{acked: map[string]bool{}, status: map[int]int{}, start: time.Now(), keyed: true}
	l.runSpread(urls, sk, evt, typeID, 12)
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
}
