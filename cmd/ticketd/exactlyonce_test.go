package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keyedReq is one POST with an Idempotency-Key of the exactly-once flood:
// its first answer (status 0 while none came: the answer was lost to the
// kill, or was a 5xx) and whether a retry has replayed it.
type keyedReq struct {
	key, path, bearer, xff string
	body                   []byte
	kind                   string // "event" or "order"
	name                   string // the event's name or the order's email

	status  int
	answer  []byte
	retried bool
}

// send posts r and answers the status, body and Idempotent-Replayed header,
// or err for a lost answer.
func (r *keyedReq) send(base string, c *http.Client) (int, []byte, bool, error) {
	req, err := http.NewRequest("POST", base+r.path, bytes.NewReader(r.body))
	if err != nil {
		return 0, nil, false, err
	}
	req.Header.Set("Authorization", "Bearer "+r.bearer)
	req.Header.Set("Idempotency-Key", r.key)
	req.Header.Set("Content-Type", "application/json")
	if r.xff != "" {
		req.Header.Set("X-Forwarded-For", r.xff)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, false, err
	}
	return resp.StatusCode, b, resp.Header.Get("Idempotent-Replayed") == "true", nil
}

// TestKill9KeyedWritesApplyExactlyOnce (decisions §20, issue 31 finding 3):
// keyed event creations and storefront order placements flood the real
// binary, which is killed with SIGKILL several times mid-flood and
// restarted. After each restart every request whose answer was lost is
// sent again with its key and body until it is answered; every answered
// request is sent again too, and must replay its first answer (status and
// body, Idempotent-Replayed). At the end each key made exactly one event
// (counted by name) or one order (counted by email).
func TestKill9KeyedWritesApplyExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts the binary several times")
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	dataDir := t.TempDir()
	// Storefront orders come through a trusted proxy (loopback) from a
	// few client addresses, so their keys are scoped per address as a
	// visitor's are.
	proxy := []string{"-trusted-proxies", "127.0.0.0/8"}
	p := start(t, dataDir, proxy...)
	sk, pk := p.secret, p.publishable
	require.NotEmpty(t, pk)
	evt, typeID := p.drop(true, map[string]any{"name": "GA", "capacity": 1_000_000, "priceAmount": 25})

	const (
		kills   = 6
		workers = 16
		// replaySample is about how many answered requests each restart
		// sends again besides the retried ones.
		replaySample = 400
	)
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
		r := &keyedReq{key: fmt.Sprintf("eo-%d-%d", seed%100000, i)}
		if i%2 == 0 {
			r.kind, r.name, r.path, r.bearer = "event", "exactly-once "+r.key, "/v1/events", sk
			r.body, _ = json.Marshal(map[string]any{"name": r.name, "timezone": "UTC"})
		} else {
			r.kind, r.name, r.bearer = "order", r.key+"@example.com", pk
			r.path = "/storefront/v1/events/" + evt + "/orders"
			r.xff = fmt.Sprintf("198.51.100.%d", 1+i%7)
			r.body, _ = json.Marshal(map[string]any{"email": r.name,
				"items": []map[string]any{{"itemType": "registration_type", "itemId": typeID, "quantity": 1}}})
		}
		all = append(all, r)
		return r
	}
	lost, replays := 0, 0
	for round := 0; round <= kills; round++ {
		if round > 0 {
			p = start(t, dataDir, proxy...)
			// Every request whose answer was lost, again with its key:
			// it applies now, or replays what it applied before the kill.
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
			// The requests retried now and a sample of the others replay
			// their first answer.
			for _, r := range all {
				if !r.retried && rng.IntN(len(all)) >= replaySample {
					continue
				}
				st, b, replayed, err := r.send(p.base, flood)
				require.NoError(t, err)
				require.Equal(t, r.status, st, "replay of %s: %s", r.key, b)
				require.Equal(t, string(r.answer), string(b), "replay of %s", r.key)
				require.True(t, replayed, "replay of %s", r.key)
				replays++
			}
		}
		if round == kills {
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
					r := newReq()
					st, b, _, err := r.send(p.base, flood)
					if err == nil && st < 500 {
						assert.Equal(t, 201, st, "%s: %s", r.key, b)
						r.status, r.answer = st, b
					}
					if err != nil {
						return // killed: the rest of this worker's answers are lost too
					}
				}
			}()
		}
		time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond)
		p.kill9()
		close(stop)
		wg.Wait()
	}
	t.Logf("%d keyed requests over %d kills: %d answers lost and retried, %d replays checked", len(all), kills, lost, replays)
	require.Positive(t, lost, "the kills cut no request: nothing was tested")

	events := map[string]int{}
	for cursor := ""; ; {
		st, page := p.call(sk, "GET", "/v1/events?limit=100"+cursor, nil)
		require.Equal(t, 200, st, page)
		for _, d := range page["data"].([]any) {
			events[d.(map[string]any)["name"].(string)]++
		}
		if page["hasMore"] != true {
			break
		}
		cursor = "&cursor=" + page["nextCursor"].(string)
	}
	orders := map[string]int{}
	for cursor := ""; ; {
		st, page := p.call(sk, "GET", "/v1/events/"+evt+"/orders?limit=100"+cursor, nil)
		require.Equal(t, 200, st, page)
		for _, d := range page["data"].([]any) {
			orders[d.(map[string]any)["email"].(string)]++
		}
		if page["hasMore"] != true {
			break
		}
		cursor = "&cursor=" + page["nextCursor"].(string)
	}
	for _, r := range all {
		if r.kind == "event" {
			assert.Equal(t, 1, events[r.name], "events made by key %s", r.key)
		} else {
			assert.Equal(t, 1, orders[r.name], "orders placed by key %s", r.key)
		}
	}
}
