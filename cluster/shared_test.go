package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app"
	"ticketd/app/apptest"
)

// doIdem is do with an Idempotency-Key, answering the Idempotent-Replayed
// header too.
func doIdem(t *testing.T, url, token, key string, body any) (int, map[string]any, bool) {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := nethttp.NewRequest("POST", url, bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m, resp.Header.Get("Idempotent-Replayed") == "true"
}

// retry503 repeats a request while the cluster answers 503 (an election,
// an event activating), as the contract tells clients to.
func retry503(t *testing.T, f func() (int, map[string]any)) (int, map[string]any) {
	t.Helper()
	st, m := f()
	for end := time.Now().Add(60 * time.Second); st == 503 && time.Now().Before(end); {
		time.Sleep(250 * time.Millisecond)
		st, m = f()
	}
	return st, m
}

// newUnit makes a business unit named name through nd's admin API and
// answers its id.
func newUnit(t *testing.T, nd *node, name string) string {
	t.Helper()
	st, u := retry503(t, func() (int, map[string]any) {
		return do(t, "POST", nd.URL+"/admin/v1/business-units", nd.Admin, map[string]any{"name": name})
	})
	require.Equal(t, 201, st, "%v", u)
	return u["id"].(string)
}

func newKey(t *testing.T, nd *node, unit string) (string, string) {
	t.Helper()
	st, k := retry503(t, func() (int, map[string]any) {
		return do(t, "POST", nd.URL+"/admin/v1/business-units/"+unit+"/api-keys", nd.Admin, map[string]any{"type": "secret"})
	})
	require.Equal(t, 201, st, "%v", k)
	return k["id"].(string), k["key"].(string)
}

// TestSharedState: what one node acknowledges, every other node serves at
// once, and after the loss of one node of three: a key made on one node
// authenticates on another at once, an event created through one is found
// through another, an idempotent retry sent to another node gets the first
// answer (and another request under its key is refused), the audit log of
// a write is listed on every node, a revoked key stops working on every
// node within the directory's poll, and a node restarted on an empty data
// dir serves all of it.
func TestSharedState(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes := startNodes(t, 3)
	a, b, c := nodes[0], nodes[1], nodes[2]

	// A new cluster makes its Default unit once, on one node.
	eventually(t, 10*time.Second, "one Default unit on every node", func() bool {
		for _, nd := range nodes {
			units := nd.Sys.Directory().Units()
			if len(units) != 1 || units[0].Name != "Default" || len(nd.Sys.Directory().Keys(units[0].ID)) != 2 {
				return false
			}
		}
		return true
	})

	// The directory: a unit and a key made through A's admin API.
	st, u := do(t, "POST", a.URL+"/admin/v1/business-units", a.Admin, map[string]any{"name": "Shared"})
	require.Equal(t, 201, st, "%v", u)
	unit := u["id"].(string)
	keyID, secret := newKey(t, a, unit)
	// B and C know the unit at once, and the key authenticates there at
	// once: an unknown key makes a node read the directory's log first. A
	// node that cannot read it (an election of its leader, frequent on a
	// starved machine) answers 503 DIRECTORY_UNAVAILABLE, which a client
	// retries; never 401.
	for _, nd := range []*node{b, c} {
		st, l := retry503(t, func() (int, map[string]any) { return do(t, "GET", nd.URL+"/v1/events", secret, nil) })
		require.Equal(t, 200, st, "key made on %s, used on %s: %v", a.name, nd.name, l)
	}

	// The event index: an event created through B is found through C.
	create := map[string]any{"name": "Drop", "timezone": "UTC", "startsAt": "2030-06-01T09:00:00Z"}
	st, ev := do(t, "POST", b.URL+"/v1/events", secret, create)
	require.Equal(t, 201, st, "%v", ev)
	evt := ev["id"].(string)
	st, got := retry503(t, func() (int, map[string]any) { return do(t, "GET", c.URL+"/v1/events/"+evt, secret, nil) })
	require.Equal(t, 200, st, "event created through %s, read through %s: %v", b.name, c.name, got)
	// A creation the core refuses leaves nothing in the index.
	st, bad := do(t, "POST", c.URL+"/v1/events", secret, map[string]any{"name": "No time zone", "timezone": "Mars/Base", "startsAt": "2030-06-01T09:00:00Z"})
	require.Equal(t, 400, st, "%v", bad)
	eventually(t, 10*time.Second, "the event is listed on every node", func() bool {
		for _, nd := range nodes {
			_, l := do(t, "GET", nd.URL+"/v1/events", secret, nil)
			data, _ := l["data"].([]any)
			if len(data) != 1 {
				return false
			}
		}
		return true
	})

	// Idempotency: the first request through A, the retry through B.
	st, first, replayed := doIdem(t, a.URL+"/v1/events", secret, "drop-1", create)
	require.Equal(t, 201, st, "%v", first)
	require.False(t, replayed)
	st, again, replayed := doIdem(t, b.URL+"/v1/events", secret, "drop-1", create)
	require.Equal(t, 201, st, "%v", again)
	require.True(t, replayed, "the retry on %s ran again", b.name)
	require.Equal(t, first["id"], again["id"])
	other := map[string]any{"name": "Other", "timezone": "UTC", "startsAt": "2030-06-01T09:00:00Z"}
	st, e, _ := doIdem(t, c.URL+"/v1/events", secret, "drop-1", other)
	require.Equal(t, 422, st, "%v", e)

	// Two nodes claiming one idempotency key at once: one request runs,
	// the other is refused (in progress) or gets its answer.
	type answer struct {
		st       int
		body     map[string]any
		replayed bool
	}
	answers := make(chan answer, 2)
	for _, nd := range []*node{a, c} {
		go func() {
			st, m, r := doIdem(t, nd.URL+"/v1/events", secret, "drop-2", create)
			answers <- answer{st, m, r}
		}()
	}
	x, y := <-answers, <-answers
	created := 0
	for _, an := range []answer{x, y} {
		switch {
		case an.st == 201 && !an.replayed:
			created++
		case an.st == 201 && an.replayed, an.st == 409:
		default:
			t.Fatalf("idempotent request answered %d: %v", an.st, an.body)
		}
	}
	require.Equal(t, 1, created, "one key, two requests at once on two nodes: %v %v", x, y)

	// Directory writes on every node at once: each is decided on the
	// state the others left, none is lost.
	const perNode = 5
	errs := make(chan error, 3*perNode)
	for _, nd := range nodes {
		go func() {
			for i := range perNode {
				_, err := nd.Sys.CreateUnit(bg, fmt.Sprintf("%s-%d", nd.name, i))
				errs <- err
			}
		}()
	}
	for range 3 * perNode {
		require.NoError(t, <-errs)
	}
	eventually(t, 5*time.Second, "every node lists every unit", func() bool {
		for _, nd := range nodes {
			if len(nd.Sys.Directory().Units()) != 2+3*perNode {
				return false
			}
		}
		return true
	})

	// The audit log: written through A and B, listed on C.
	eventually(t, 10*time.Second, "the audit log on every node", func() bool {
		for _, nd := range nodes {
			_, l := do(t, "GET", nd.URL+"/admin/v1/business-units/"+unit+"/audit-log", nd.Admin, nil)
			data, _ := l["data"].([]any)
			if len(data) < 2 {
				return false
			}
		}
		return true
	})

	// One node of three is lost: what it acknowledged is served by the
	// others, and they go on writing.
	require.NoError(t, b.Main.Close())
	st2, again2, replayed2 := doIdemRetry(t, c.URL+"/v1/events", secret, "drop-1", create)
	require.Equal(t, 201, st2, "%v", again2)
	require.True(t, replayed2, "the retry on %s after %s's loss ran again", c.name, b.name)
	require.Equal(t, first["id"], again2["id"])
	st, got = retry503(t, func() (int, map[string]any) { return do(t, "GET", c.URL+"/v1/events/"+evt, secret, nil) })
	require.Equal(t, 200, st, "%v", got)
	start := time.Now()
	_, secret2 := newKey(t, c, unit)
	t.Logf("a directory write after %s's loss took %s", b.name, time.Since(start).Round(time.Millisecond))
	st, l := retry503(t, func() (int, map[string]any) { return do(t, "GET", a.URL+"/v1/events", secret2, nil) })
	require.Equal(t, 200, st, "key made on %s, used on %s: %v", c.name, a.name, l)

	// A revocation on A reaches C within the directory's poll.
	st, r := retry503(t, func() (int, map[string]any) {
		return do(t, "POST", a.URL+"/admin/v1/api-keys/"+keyID+"/revoke", a.Admin, nil)
	})
	require.Equal(t, 200, st, "%v", r)
	start = time.Now()
	eventually(t, 3*time.Second, "the revoked key refused on "+c.name, func() bool {
		st, _ := do(t, "GET", c.URL+"/v1/events", secret, nil)
		return st == 401
	})
	t.Logf("a revocation on %s reached %s in %s", a.name, c.name, time.Since(start).Round(time.Millisecond))

	st, third, _ := doIdemRetry(t, a.URL+"/v1/events", secret2, "drop-3", create)
	require.Equal(t, 201, st, "%v", third)

	// The lost node comes back on an empty data dir: it reads the
	// directory and the shared index from the others.
	start = time.Now()
	b2 := &node{name: b.name, Service: apptest.Start(t, func(cf *app.Config) {
		cf.NodeName, cf.ClusterAddr, cf.ClusterPeers = b.Config.NodeName, b.Config.ClusterAddr, b.Config.ClusterPeers
	})}
	eventually(t, 90*time.Second, b2.name+" ready again", func() bool {
		st, _ := do(t, "GET", b2.URL+"/readyz", "", nil)
		return st == 200
	})
	t.Logf("%s ready on an empty data dir after %s", b2.name, time.Since(start).Round(time.Millisecond))
	st, l = retry503(t, func() (int, map[string]any) { return do(t, "GET", b2.URL+"/v1/events", secret2, nil) })
	require.Equal(t, 200, st, "%v", l)
	st, _ = do(t, "GET", b2.URL+"/v1/events", secret, nil)
	require.Equal(t, 401, st, "the key revoked while %s was away", b2.name)
	eventually(t, 10*time.Second, "the events listed on "+b2.name, func() bool {
		_, l := do(t, "GET", b2.URL+"/v1/events", secret2, nil)
		data, _ := l["data"].([]any)
		return len(data) == 4
	})
	st, again3, replayed3 := doIdemRetry(t, b2.URL+"/v1/events", secret2, "drop-3", create)
	require.Equal(t, 201, st, "%v", again3)
	require.True(t, replayed3, "a key's answer given while %s was away, retried on it", b2.name)
	require.Equal(t, third["id"], again3["id"])

	// What a replicated idempotency key costs a request (logged).
	const n = 20
	var plain, keyed []time.Duration
	for i := range n {
		t0 := time.Now()
		st, _ := do(t, "POST", a.URL+"/v1/events", secret2, create)
		plain = append(plain, time.Since(t0))
		t1 := time.Now()
		st2, _, _ := doIdem(t, a.URL+"/v1/events", secret2, fmt.Sprintf("cost-%d", i), create)
		keyed = append(keyed, time.Since(t1))
		require.Equal(t, 201, st)
		require.Equal(t, 201, st2)
	}
	slices.Sort(plain)
	slices.Sort(keyed)
	t.Logf("POST /v1/events median %s without an Idempotency-Key, %s with one (%d each)",
		plain[n/2].Round(100*time.Microsecond), keyed[n/2].Round(100*time.Microsecond), n)
}

var bg = context.Background()

func doIdemRetry(t *testing.T, url, token, key string, body any) (int, map[string]any, bool) {
	t.Helper()
	st, m, r := doIdem(t, url, token, key, body)
	for end := time.Now().Add(60 * time.Second); st == 503 && time.Now().Before(end); {
		time.Sleep(250 * time.Millisecond)
		st, m, r = doIdem(t, url, token, key, body)
	}
	return st, m, r
}
