package cluster_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app"
	"ticketd/app/apptest"
	"ticketd/internal/testaddr"
)

// node is one ticketd of the in-process cluster.
type node struct {
	*apptest.Service
	name string
}

var client = &nethttp.Client{Timeout: 60 * time.Second, Transport: &nethttp.Transport{DisableKeepAlives: true}}

func do(t *testing.T, method, url, token string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := nethttp.NewRequest(method, url, rd)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// orderKeyed places an order of one ticket of typeID with an idempotency
// key.
func orderKeyed(t *testing.T, url, token, key string, i int, typeID string) (int, map[string]any) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"email": fmt.Sprintf("buyer%d@example.com", i),
		"items": []map[string]any{{"itemType": "registration_type", "itemId": typeID, "quantity": 1}}})
	require.NoError(t, err)
	req, err := nethttp.NewRequest("POST", url, bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// eventually retries check every 200 ms until it passes or timeout ends.
func eventually(t *testing.T, timeout time.Duration, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !check() {
		require.True(t, time.Now().Before(deadline), "timed out after %s: %s", timeout, what)
		time.Sleep(200 * time.Millisecond)
	}
}

func startNodes(t *testing.T, n int, opts ...apptest.Option) []*node {
	t.Helper()
	addrs := testaddr.Free(t, n)
	peers := fmt.Sprint(addrs[0])
	for _, a := range addrs[1:] {
		peers += "," + a
	}
	nodes := make([]*node, n)
	for i := range n {
		name := fmt.Sprintf("n%d", i+1)
		nodes[i] = &node{name: name, Service: apptest.Start(t, append(opts, func(c *app.Config) {
			c.NodeName, c.ClusterAddr, c.ClusterPeers = name, addrs[i], peers
		})...)}
	}
	for _, nd := range nodes {
		eventually(t, 60*time.Second, nd.name+" ready", func() bool {
			st, _ := do(t, "GET", nd.URL+"/readyz", "", nil)
			return st == 200
		})
	}
	// The shards' leaders, hence the owners, spread before the test
	// relies on them staying put. Meanwhile a plan settles in a second,
	// not the default 5 s (as clustertest.WaitSpread does: a cluster just
	// formed has no election to wait out): the wait took 7-8 s of a
	// 17 s test. The default is back before the test goes on.
	for _, nd := range nodes {
		nd.Main.Node().SetPlanSettle(time.Second)
	}
	defer func() {
		for _, nd := range nodes {
			nd.Main.Node().SetPlanSettle(0)
		}
	}()
	eventually(t, 60*time.Second, "leaders spread", func() bool {
		for _, nd := range nodes {
			if nd.Main.Node().Leading() < nd.Main.Node().Config().Shards/n {
				return false
			}
		}
		return true
	})
	return nodes
}

func ownerOf(t *testing.T, nd *node, evt string) string {
	t.Helper()
	st, body := do(t, "GET", nd.URL+"/admin/v1/events/"+evt+"/owner", nd.Admin, nil)
	if st != 200 {
		return ""
	}
	name, _ := body["node"].(string)
	return name
}

// TestThreeNodes runs three ticketd on loopback in this process: the
// cluster forms and every node lists the three by name as ready, an event
// that does not exist has no owner (404), every node names the same owner
// for an event, an event
// created and sold through a node that does not own it is handled by its
// owner, and when the owner is lost a survivor takes the event over with
// every acknowledged order, never selling past capacity.
func TestThreeNodes(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes := startNodes(t, 3)
	eventually(t, 15*time.Second, "every node lists three ready nodes", func() bool {
		for _, nd := range nodes {
			st, body := do(t, "GET", nd.URL+"/admin/v1/cluster", nd.Admin, nil)
			list, _ := body["nodes"].([]any)
			if st != 200 || len(list) != 3 {
				return false
			}
			names := map[string]bool{}
			for _, x := range list {
				n := x.(map[string]any)
				if r, _ := n["ready"].(bool); !r {
					return false
				}
				name, _ := n["name"].(string)
				names[name] = true
			}
			if !names["n1"] || !names["n2"] || !names["n3"] {
				return false
			}
		}
		return true
	})
	// An event that does not exist has no owner, as on a single node.
	for _, nd := range nodes {
		st, body := do(t, "GET", nd.URL+"/admin/v1/events/evt_nosuchevent/owner", nd.Admin, nil)
		require.Equal(t, 404, st, "%v", body)
	}

	// Node A takes the requests; the unit and its key live in its
	// directory.
	a := nodes[0]
	u := a.NewUnit("Drops")
	var evt, owner string
	for range 20 {
		st, ev := do(t, "POST", a.URL+"/v1/events", u.Secret, map[string]any{"name": "Drop", "timezone": "UTC", "startsAt": "2030-06-01T09:00:00Z"})
		require.Equal(t, 201, st, "%v", ev)
		evt = ev["id"].(string)
		owner = ownerOf(t, a, evt)
		if owner != "" && owner != a.name {
			break
		}
	}
	require.NotEqual(t, a.name, owner, "every event landed on %s: the leaders are not spread", a.name)
	for _, nd := range nodes {
		require.Equal(t, owner, ownerOf(t, nd, evt), "owner as %s sees it", nd.name)
	}
	var b *node
	for _, nd := range nodes {
		if nd.name == owner {
			b = nd
		}
	}
	require.Equal(t, 1, b.Sys.ActiveEvents(), "the owner runs the event's actor")
	// A runs the actors of the events it owns, created before: none more.
	activeOnA := a.Sys.ActiveEvents()

	const capacity = 4
	st, tt := do(t, "POST", a.URL+"/v1/events/"+evt+"/ticket-types", u.Secret, map[string]any{"name": "GA", "capacity": capacity, "priceAmount": 0})
	require.Equal(t, 201, st, "%v", tt)
	typeID := tt["id"].(string)
	st, _ = do(t, "PATCH", a.URL+"/v1/events/"+evt+"/ticket-types/"+typeID, u.Secret, map[string]any{"status": "open"})
	require.Equal(t, 200, st)
	st, _ = do(t, "PATCH", a.URL+"/v1/events/"+evt, u.Secret, map[string]any{"status": "published"})
	require.Equal(t, 200, st)

	order := func(i int) (int, map[string]any) {
		return do(t, "POST", a.URL+"/v1/events/"+evt+"/orders", u.Secret, map[string]any{"email": fmt.Sprintf("buyer%d@example.com", i),
			"items": []map[string]any{{"itemType": "registration_type", "itemId": typeID, "quantity": 1}}})
	}
	acked := map[string]bool{}
	for i := range 2 {
		st, o := order(i)
		require.Equal(t, 201, st, "%v", o)
		acked[o["id"].(string)] = true
	}
	require.Equal(t, activeOnA, a.Sys.ActiveEvents(), "the forwarding node runs no actor for the event")
	// A rejection is answered as the owner answered it.
	st, e := do(t, "PATCH", a.URL+"/v1/events/"+evt+"/ticket-types/"+typeID, u.Secret, map[string]any{"status": "bogus"})
	require.Equal(t, 400, st, "%v", e)

	// The owner is lost.
	require.NoError(t, b.Main.Close())
	var survivor string
	eventually(t, 60*time.Second, "a survivor owns the event", func() bool {
		survivor = ownerOf(t, a, evt)
		return survivor != "" && survivor != b.name
	})
	t.Logf("%s lost; %s owns %s", b.name, survivor, evt)

	listed := func() map[string]bool {
		// A 503 while the survivor activates the event is retried, as the
		// contract tells clients to.
		st, l := do(t, "GET", a.URL+"/v1/events/"+evt+"/orders?limit=100", u.Secret, nil)
		for end := time.Now().Add(60 * time.Second); st == 503 && time.Now().Before(end); {
			time.Sleep(250 * time.Millisecond)
			st, l = do(t, "GET", a.URL+"/v1/events/"+evt+"/orders?limit=100", u.Secret, nil)
		}
		require.Equal(t, 200, st, "%v", l)
		got := map[string]bool{}
		for _, x := range l["data"].([]any) {
			got[x.(map[string]any)["id"].(string)] = true
		}
		return got
	}
	got := listed()
	for id := range acked {
		require.True(t, got[id], "acknowledged order %s lost", id)
	}
	for i := 2; i < capacity+3; i++ {
		// While ownership settles after the loss an order may be answered
		// 503 (its outcome unknown): retried with its idempotency key, as
		// the contract tells clients to, it is answered once for good.
		key := fmt.Sprintf("order-%s-%d", evt, i)
		st, o := orderKeyed(t, a.URL+"/v1/events/"+evt+"/orders", u.Secret, key, i, typeID)
		for end := time.Now().Add(60 * time.Second); st == 503 && time.Now().Before(end); {
			time.Sleep(250 * time.Millisecond)
			st, o = orderKeyed(t, a.URL+"/v1/events/"+evt+"/orders", u.Secret, key, i, typeID)
		}
		if st == 201 {
			acked[o["id"].(string)] = true
		} else {
			require.Equal(t, 412, st, "%v", o)
		}
	}
	require.Len(t, acked, capacity, "sold exactly the capacity")
	require.Equal(t, acked, listed())
}

// TestSingleNodeClusterRoutes: without a cluster, the cluster routes
// answer the one node, "local", ready, and as the owner of every event
// that exists (404 otherwise).
func TestSingleNodeClusterRoutes(t *testing.T) {
	s := apptest.Start(t)
	st, body := do(t, "GET", s.URL+"/admin/v1/cluster", s.Admin, nil)
	require.Equal(t, 200, st, "%v", body)
	require.Equal(t, []any{map[string]any{"name": "local", "ready": true}}, body["nodes"])

	u := s.NewUnit("One")
	st, ev := do(t, "POST", s.URL+"/v1/events", u.Secret, map[string]any{"name": "Drop", "timezone": "UTC", "startsAt": "2030-06-01T09:00:00Z"})
	require.Equal(t, 201, st, "%v", ev)
	st, body = do(t, "GET", s.URL+"/admin/v1/events/"+ev["id"].(string)+"/owner", s.Admin, nil)
	require.Equal(t, 200, st, "%v", body)
	require.Equal(t, map[string]any{"node": "local"}, body)
	st, body = do(t, "GET", s.URL+"/admin/v1/events/evt_nosuchevent/owner", s.Admin, nil)
	require.Equal(t, 404, st, "%v", body)
	// Both are admin routes.
	st, _ = do(t, "GET", s.URL+"/admin/v1/cluster", u.Secret, nil)
	require.Equal(t, 401, st)
}
