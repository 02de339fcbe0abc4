package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// liveWait bounds the wait for a ready node to retry through: longer than
// a kill -9's failover (2.5-6.7 s measured) and a planned move's pause.
const liveWait = 60 * time.Second

// keyedCall is one POST with an Idempotency-Key; its first answer (status
// 0 while none came: lost to a kill, or a 5xx).
type keyedCall struct {
	key, path, name, kind string
	body                  []byte
	status                int
	answer                []byte
}

func (k *keyedCall) send(base, token string) (int, []byte, bool, error) {
	req, err := nethttp.NewRequest("POST", base+k.path, bytes.NewReader(k.body))
	if err != nil {
		return 0, nil, false, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", k.key)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header.Get("Idempotent-Replayed") == "true", err
}

// TestClusterKeyedWritesExactlyOnce (decisions §20): keyed order
// placements for an event owned by another node, and keyed event
// creations, flood a 3-node cluster through one node (the front); kill -9
// takes the event's owner (its answers in flight are lost after the write
// may have been replicated) and, once, the front itself (its claims of
// the keys in flight dangle). Every request whose answer was lost is sent
// again through a live node with its key until it is answered, and must
// answer 201 (the first write's answer, or the write made now); an
// answered one sent again replays its answer. At the end each key made
// exactly one order (by email) or one event (by name).
func TestClusterKeyedWritesExactlyOnce(t *testing.T) {
	procs := startProcs(t, 3)
	for _, p := range procs {
		waitFor(t, 90*time.Second, p.name+" ready", func() bool { return ready(p) })
	}
	byName := map[string]*proc{}
	for _, p := range procs {
		byName[p.name] = p
	}
	front := procs[0]
	sk := newUnit(t, front, "Once")

	var evt string
	waitFor(t, 120*time.Second, "an event owned by another node", func() bool {
		st, ev, err := call("POST", front.url()+"/v1/events", sk, map[string]any{"name": "Drop", "timezone": "UTC", "startsAt": "2030-06-01T09:00:00Z"})
		if err != nil || st != 201 {
			return false
		}
		evt = ev["id"].(string)
		own := owner(front, evt)
		return own != "" && own != front.name
	})
	st, tt, err := call("POST", front.url()+"/v1/events/"+evt+"/ticket-types", sk, map[string]any{"name": "GA", "capacity": 1_000_000, "priceAmount": 0})
	require.NoError(t, err)
	require.Equal(t, 201, st, "%v", tt)
	typeID := tt["id"].(string)
	st, _, _ = call("PATCH", front.url()+"/v1/events/"+evt+"/ticket-types/"+typeID, sk, map[string]any{"status": "open"})
	require.Equal(t, 200, st)
	st, _, _ = call("PATCH", front.url()+"/v1/events/"+evt, sk, map[string]any{"status": "published"})
	require.Equal(t, 200, st)

	var (
		mu   sync.Mutex
		all  []*keyedCall
		next int
	)
	newCall := func() *keyedCall {
		mu.Lock()
		defer mu.Unlock()
		i := next
		next++
		k := &keyedCall{key: fmt.Sprintf("once-%d", i)}
		if i%4 == 3 {
			k.kind, k.name, k.path = "event", "once "+k.key, "/v1/events"
			k.body, _ = json.Marshal(map[string]any{"name": k.name, "timezone": "UTC"})
		} else {
			k.kind, k.name, k.path = "order", k.key+"@example.com", "/v1/events/"+evt+"/orders"
			k.body, _ = json.Marshal(map[string]any{"email": k.name,
				"items": []map[string]any{{"itemType": "registration_type", "itemId": typeID, "quantity": 1}}})
		}
		all = append(all, k)
		return k
	}
	// live is a ready node, waited for: both survivors may say they are
	// not ready for a moment while the shards they lead move (a restarted
	// node's shards balanced back to it, an election), which is no fault.
	live := func() *proc {
		var p *proc
		waitFor(t, liveWait, "a node ready", func() bool {
			for _, q := range procs {
				if ready(q) {
					p = q
					return true
				}
			}
			return false
		})
		return p
	}
	lost, retried := 0, 0
	victims := []string{"owner", "front", "owner"}
	for round, which := range victims {
		// Flood through the front, then kill the victim mid-flood.
		stop := make(chan struct{})
		var wg sync.WaitGroup
		base := front.url()
		for range 12 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					k := newCall()
					st, b, _, err := k.send(base, sk)
					if err == nil && st < 500 {
						if !assert.Equal(t, 201, st, "%s: %s", k.key, b) {
							return
						}
						k.status, k.answer = st, b
					}
					if err != nil || st >= 500 {
						return // the answers of this client are being lost
					}
				}
			})
		}
		time.Sleep(3 * time.Second)
		victim := front
		if which == "owner" {
			victim = byName[owner(front, evt)]
		}
		t.Logf("round %d: kill -9 %s (%s) mid-flood", round+1, victim.name, which)
		victim.kill()
		time.Sleep(2 * time.Second)
		close(stop)
		wg.Wait()
		if victim == front {
			for _, p := range procs {
				if p != victim && ready(p) {
					front = p
				}
			}
		}
		// Every lost answer again, with its key, through a live node.
		for _, k := range all {
			if k.status != 0 {
				continue
			}
			lost++
			deadline := time.Now().Add(3 * time.Minute)
			for {
				st, b, _, err := k.send(live().url(), sk)
				// A 409 other than the key's first request still running
				// (a write decided again: ALREADY_EXISTS) is final.
				if err == nil && st < 500 && (st != 409 || !bytes.Contains(b, []byte("IDEMPOTENCY_KEY_IN_PROGRESS"))) {
					require.Equal(t, 201, st, "retry of %s: %s", k.key, b)
					k.status, k.answer = st, b
					break
				}
				require.True(t, time.Now().Before(deadline), "retry of %s: %d %s %v", k.key, st, b, err)
				time.Sleep(250 * time.Millisecond)
			}
			retried++
		}
		victim.start(t)
		waitFor(t, 90*time.Second, victim.name+" ready again", func() bool { return ready(victim) })
	}
	// Answered requests replay through any node.
	for i, k := range all {
		if i%7 != 0 {
			continue
		}
		st, b, replayed, err := k.send(procs[i%3].url(), sk)
		require.NoError(t, err)
		require.Equal(t, k.status, st, "replay of %s: %s", k.key, b)
		require.Equal(t, string(k.answer), string(b), "replay of %s", k.key)
		require.True(t, replayed, "replay of %s", k.key)
	}
	t.Logf("%d keyed requests, %d answers lost and %d retried through another node", len(all), lost, retried)
	require.Positive(t, lost, "the kills cut no request: nothing was tested")

	orders := map[string]int{}
	for cursor := ""; ; {
		u := front.url() + "/v1/events/" + evt + "/orders?limit=100"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		st, page, err := call("GET", u, sk, nil)
		require.NoError(t, err)
		require.Equal(t, 200, st, "%v", page)
		for _, x := range page["data"].([]any) {
			orders[x.(map[string]any)["email"].(string)]++
		}
		next, _ := page["nextCursor"].(string)
		if more, _ := page["hasMore"].(bool); !more || next == "" {
			break
		}
		cursor = next
	}
	events := map[string]int{}
	for cursor := ""; ; {
		u := front.url() + "/v1/events?limit=100"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		st, page, err := call("GET", u, sk, nil)
		require.NoError(t, err)
		require.Equal(t, 200, st, "%v", page)
		for _, x := range page["data"].([]any) {
			events[x.(map[string]any)["name"].(string)]++
		}
		next, _ := page["nextCursor"].(string)
		if more, _ := page["hasMore"].(bool); !more || next == "" {
			break
		}
		cursor = next
	}
	for _, k := range all {
		if k.kind == "event" {
			assert.Equal(t, 1, events[k.name], "events made by key %s", k.key)
		} else {
			assert.Equal(t, 1, orders[k.name], "orders placed by key %s", k.key)
		}
	}
}
