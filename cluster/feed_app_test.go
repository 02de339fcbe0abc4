package cluster_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFeedThroughAnyNode: in cluster mode the change feed's entries are
// written with the change into the replicated log and served by the
// event's owner through any node: every node answers the same feed, and a
// long poll through a node that does not own the event wakes at a change
// made through a third node.
func TestFeedThroughAnyNode(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes := startNodes(t, 3)
	a := nodes[0]
	u := a.NewUnit("Feeds")
	var evt, owner string
	for range 20 {
		st, ev := do(t, "POST", a.URL+"/v1/events", u.Secret, map[string]any{"name": "Feed", "timezone": "UTC", "startsAt": "2030-06-01T09:00:00Z"})
		require.Equal(t, 201, st, "%v", ev)
		evt = ev["id"].(string)
		if owner = ownerOf(t, a, evt); owner != "" && owner != a.name {
			break
		}
	}
	require.NotEqual(t, a.name, owner)
	var third *node
	for _, nd := range nodes {
		if nd.name != owner && nd.name != a.name {
			third = nd
		}
	}
	st, tt := do(t, "POST", a.URL+"/v1/events/"+evt+"/ticket-types", u.Secret, map[string]any{"name": "GA", "capacity": 100, "priceAmount": 0})
	require.Equal(t, 201, st, "%v", tt)
	typeID := tt["id"].(string)
	st, _ = do(t, "PATCH", a.URL+"/v1/events/"+evt+"/ticket-types/"+typeID, u.Secret, map[string]any{"status": "open"})
	require.Equal(t, 200, st)
	register := func(nd *node, i int) string {
		st, r := do(t, "POST", nd.URL+"/v1/events/"+evt+"/registrations", u.Secret,
			map[string]any{"email": fmt.Sprintf("f%d@example.com", i), "registrationTypeId": typeID})
		require.Equal(t, 201, st, "%v", r)
		return r["id"].(string)
	}
	var regs []string
	for i := range 3 {
		regs = append(regs, register(nodes[i%3], i))
	}
	// Every node answers the same feed.
	var want []any
	for _, nd := range nodes {
		st, p := do(t, "GET", nd.URL+"/v1/events/"+evt+"/changes", u.Secret, nil)
		require.Equal(t, 200, st, "%s: %v", nd.name, p)
		data := p["data"].([]any)
		require.Len(t, data, 3, nd.name)
		for i, d := range data {
			ch := d.(map[string]any)
			require.EqualValues(t, i+1, ch["seq"])
			require.Equal(t, regs[i], ch["object"].(map[string]any)["id"])
		}
		if want == nil {
			want = data
		}
		require.Equal(t, want, data, "%s answers the feed the others do", nd.name)
	}
	st, p := do(t, "GET", a.URL+"/v1/events/"+evt+"/changes", u.Secret, nil)
	require.Equal(t, 200, st)
	cursor := p["nextCursor"].(string)

	// A long poll through a node that does not own the event, woken by a
	// change made through the third.
	type res struct {
		st int
		p  map[string]any
		at time.Time
	}
	got := make(chan res, 1)
	go func() {
		st, p := do(t, "GET", a.URL+"/v1/events/"+evt+"/changes?wait=30&after="+cursor, u.Secret, nil)
		got <- res{st, p, time.Now()}
	}()
	time.Sleep(500 * time.Millisecond)
	reg := register(third, 99)
	made := time.Now()
	select {
	case r := <-got:
		require.Equal(t, 200, r.st, "%v", r.p)
		data := r.p["data"].([]any)
		require.Len(t, data, 1)
		ch := data[0].(map[string]any)
		require.EqualValues(t, 4, ch["seq"])
		require.Equal(t, reg, ch["object"].(map[string]any)["id"])
		require.Less(t, r.at.Sub(made), 10*time.Second, "woken by the commit")
	case <-time.After(40 * time.Second):
		t.Fatal("the long poll through a non-owner did not answer")
	}
	// The list's Feed-Cursor through any node is the owner's position.
	st, _ = do(t, "GET", third.URL+"/v1/events/"+evt+"/changes?after="+cursor, u.Secret, nil)
	require.Equal(t, 200, st)
}
