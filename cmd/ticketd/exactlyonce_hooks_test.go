package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKill9KeyedWebhookEndpointsApplyExactlyOnce (decisions §20, issue 31
// finding 3, for the admin API): keyed webhook endpoint creations flood the
// real binary, killed with SIGKILL mid-flood and restarted; every request
// whose answer was lost is sent again with its key until answered, and
// every answered one replays its first answer (the endpoint's id and its
// secret, shown only once). At the end each key made exactly one endpoint:
// the key's record commits in the endpoint's own batch.
func TestKill9KeyedWebhookEndpointsApplyExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts the binary several times")
	}
	const (
		kills   = 3
		workers = 8
		units   = 40 // 50 endpoints a unit at most
		token   = "adm_exactly_once_hooks_0123456789"
	)
	dataDir := t.TempDir()
	args := []string{"-admin-token", token, "-webhook-allow-private"}
	p := start(t, dataDir, args...)
	var unitIDs []string
	for i := range units {
		st, u := p.call(token, "POST", "/admin/v1/business-units", map[string]any{"name": fmt.Sprintf("hooks %d", i)})
		require.Equal(t, 201, st, u)
		unitIDs = append(unitIDs, u["id"].(string))
	}
	flood := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	var (
		mu   sync.Mutex
		all  []*keyedReq
		next int
	)
	newReq := func() *keyedReq {
		mu.Lock()
		defer mu.Unlock()
		i := next
		next++
		r := &keyedReq{key: fmt.Sprintf("hook-%d-%d", time.Now().UnixNano()%100000, i), kind: "hook", bearer: token}
		r.name = r.key
		r.path = "/admin/v1/business-units/" + unitIDs[i%units] + "/webhook-endpoints"
		r.body, _ = json.Marshal(map[string]any{"url": "http://localhost:9/hook", "eventTypes": []string{"order.paid"}, "description": r.name})
		all = append(all, r)
		return r
	}
	lost := 0
	for round := 0; round <= kills; round++ {
		if round > 0 {
			p = start(t, dataDir, args...)
			for _, r := range all {
				if r.status != 0 {
					continue
				}
				lost++
				r.retried = true
				deadline := time.Now().Add(30 * time.Second)
				for {
					st, b, _, err := r.send(p.base, flood)
					if err == nil && st < 500 {
						require.Equal(t, 201, st, "retry of %s: %s", r.key, b)
						r.status, r.answer = st, b
						break
					}
					require.True(t, time.Now().Before(deadline), "retry of %s: %d %s %v", r.key, st, b, err)
					time.Sleep(100 * time.Millisecond)
				}
			}
			for _, r := range all {
				st, b, replayed, err := r.send(p.base, flood)
				require.NoError(t, err)
				require.Equal(t, r.status, st, "replay of %s: %s", r.key, b)
				require.Equal(t, string(r.answer), string(b), "replay of %s", r.key)
				require.True(t, replayed, "replay of %s", r.key)
			}
		}
		if round == kills || len(all) >= units*45 {
			break
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					mu.Lock()
					full := next >= units*45
					mu.Unlock()
					if full {
						return
					}
					r := newReq()
					st, b, _, err := r.send(p.base, flood)
					if err == nil && st < 500 {
						assert.Equal(t, 201, st, "%s: %s", r.key, b)
						r.status, r.answer = st, b
					}
					if err != nil {
						return // killed
					}
				}
			}()
		}
		time.Sleep(time.Duration(200+100*round) * time.Millisecond)
		p.kill9()
		close(stop)
		wg.Wait()
	}
	t.Logf("%d keyed endpoint creations over %d kills: %d answers lost and retried", len(all), kills, lost)
	require.Positive(t, lost, "the kills cut no request: nothing was tested")

	made := map[string]int{}
	for _, u := range unitIDs {
		for cursor := ""; ; {
			st, page := p.call(token, "GET", "/admin/v1/business-units/"+u+"/webhook-endpoints?limit=100"+cursor, nil)
			require.Equal(t, 200, st, page)
			for _, d := range page["data"].([]any) {
				made[d.(map[string]any)["description"].(string)]++
			}
			if page["hasMore"] != true {
				break
			}
			cursor = "&cursor=" + page["nextCursor"].(string)
		}
	}
	for _, r := range all {
		require.Equal(t, 1, made[r.name], "endpoints made by key %s", r.key)
	}
	require.Len(t, made, len(all))
}
