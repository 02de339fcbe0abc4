package cluster_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sfDo is do for the storefront with a Queue-Token (none when empty); a
// 503 while ownership moves is retried, as the contract tells clients to.
func sfDo(t *testing.T, method, url, key, token string, body any) (int, map[string]any) {
	t.Helper()
	for end := time.Now().Add(60 * time.Second); ; {
		var rd *bytes.Reader
		if body != nil {
			b, err := json.Marshal(body)
			require.NoError(t, err)
			rd = bytes.NewReader(b)
		} else {
			rd = bytes.NewReader(nil)
		}
		req, err := nethttp.NewRequest(method, url, rd)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if token != "" {
			req.Header.Set("Queue-Token", token)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		if resp.StatusCode != 503 || time.Now().After(end) {
			return resp.StatusCode, m
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestQueueSurvivesOwnerLoss: an event's waiting room lives in the event's
// log (decisions §19). Buyers join through a node that does not own the
// event; after the shuffle and a first admission the owner is lost: on the
// survivor that takes the event over every entry keeps its place in the
// queue order, the admitted entry keeps its token, the token buys (once),
// and admission goes on in the same order.
func TestQueueSurvivesOwnerLoss(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes := startNodes(t, 3)
	a := nodes[0]
	u := a.NewUnit("Queue")
	var evt, owner string
	for range 20 {
		st, ev := do(t, "POST", a.URL+"/v1/events", u.Secret, map[string]any{"name": "Drop", "timezone": "UTC", "startsAt": "2030-06-01T09:00:00Z"})
		require.Equal(t, 201, st, "%v", ev)
		evt = ev["id"].(string)
		eventually(t, 30*time.Second, "an owner", func() bool { owner = ownerOf(t, a, evt); return owner != "" })
		if owner != a.name {
			break
		}
	}
	require.NotEqual(t, a.name, owner, "every event landed on %s", a.name)
	var b *node
	for _, nd := range nodes {
		if nd.name == owner {
			b = nd
		}
	}
	st, tt := do(t, "POST", a.URL+"/v1/events/"+evt+"/ticket-types", u.Secret, map[string]any{"name": "GA", "capacity": 10, "priceAmount": 0})
	require.Equal(t, 201, st, "%v", tt)
	typeID := tt["id"].(string)
	st, _ = do(t, "PATCH", a.URL+"/v1/events/"+evt+"/ticket-types/"+typeID, u.Secret, map[string]any{"status": "open"})
	require.Equal(t, 200, st)
	onSale := time.Now().Add(3 * time.Second).UTC().Truncate(time.Second).Add(time.Second)
	// One admission a minute: the first comes at the shuffle's next tick,
	// the second not before the test is over.
	st, ev := do(t, "PATCH", a.URL+"/v1/events/"+evt, u.Secret, map[string]any{"status": "published",
		"waitingRoom": map[string]any{"onSaleAt": onSale.Format(time.RFC3339), "admitPerMinute": 1}})
	require.Equal(t, 200, st, "%v", ev)

	sf := a.URL + "/storefront/v1/events/" + evt
	const buyers = 6
	var ids []string
	for range buyers {
		st, q := sfDo(t, "POST", sf+"/queue", u.Publishable, "", map[string]any{})
		require.Equal(t, 201, st, "%v", q)
		ids = append(ids, q["queueId"].(string))
	}
	poll := func(id string) map[string]any {
		st, q := sfDo(t, "GET", sf+"/queue/"+id, u.Publishable, "", nil)
		require.Equal(t, 200, st, "%v", q)
		return q
	}
	// After the shuffle and the first admission: one admitted, the rest
	// waiting at positions 1..buyers-1.
	var token, admitted string
	positions := map[string]float64{}
	eventually(t, 60*time.Second, "the shuffle and a first admission", func() bool {
		token, admitted = "", ""
		clear(positions)
		for _, id := range ids {
			q := poll(id)
			switch q["state"] {
			case "admitted":
				token, admitted = q["queueToken"].(string), id
			case "waiting":
				if p, ok := q["position"].(float64); ok {
					positions[id] = p
				}
			}
		}
		return token != "" && len(positions) == buyers-1
	})

	// The owner is lost.
	require.NoError(t, b.Main.Close())
	var survivor string
	eventually(t, 60*time.Second, "a survivor owns the event", func() bool {
		survivor = ownerOf(t, a, evt)
		return survivor != "" && survivor != b.name
	})
	t.Logf("%s lost; %s owns %s", b.name, survivor, evt)

	q := poll(admitted)
	require.Equal(t, "admitted", q["state"], "%v", q)
	require.Equal(t, token, q["queueToken"], "the admitted entry keeps its token")
	// Admission goes on at its rate on the survivor: k more may have been
	// admitted meanwhile, the first k in queue order; the others wait k
	// places nearer the front.
	// The entries are polled one at a time, so an admission between two
	// polls would show one entry before it and the next after it: read
	// rounds until two in a row agree (a snapshot no admission cut).
	read := func() (map[string]map[string]any, int) {
		after, k := map[string]map[string]any{}, 0
		for id := range positions {
			after[id] = poll(id)
			if after[id]["state"] == "admitted" {
				k++
			}
		}
		return after, k
	}
	after, k := read()
	for end := time.Now().Add(60 * time.Second); ; {
		again, k2 := read()
		if k2 == k && fmt.Sprint(again) == fmt.Sprint(after) {
			break
		}
		require.False(t, time.Now().After(end), "the queue's states kept moving for a minute at one admission a minute")
		after, k = again, k2
	}
	for id, p := range positions {
		q := after[id]
		if int(p) <= k {
			require.Equal(t, "admitted", q["state"], "entry %s at position %v, %d admitted since: %v", id, p, k, q)
			continue
		}
		require.Equal(t, "waiting", q["state"], "%v", q)
		require.Equal(t, p-float64(k), q["position"], "entry %s keeps its place in the queue order", id)
	}

	order := func(token string, i int) (int, map[string]any) {
		return sfDo(t, "POST", sf+"/orders", u.Publishable, token, map[string]any{"email": fmt.Sprintf("q%d@example.com", i),
			"items": []map[string]any{{"itemType": "registration_type", "itemId": typeID, "quantity": 1}}})
	}
	st, o := order(token, 1)
	require.Equal(t, 201, st, "the token survived: %v", o)
	st, e := order(token, 2)
	require.Equal(t, 412, st, "%v", e)
	require.Equal(t, "QUEUE_TOKEN_INVALID", e["error"].(map[string]any)["reason"], "a token places one order")
	st, e = order("", 3)
	require.Equal(t, 412, st, "%v", e)
	require.Equal(t, "QUEUE_TOKEN_REQUIRED", e["error"].(map[string]any)["reason"])
}
