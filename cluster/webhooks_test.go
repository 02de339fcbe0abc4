package cluster_test

import (
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
	"ticketd/webhooks"
)

// hookSink is a loopback webhook receiver that keeps what it is sent;
// while down it answers 500.
type hookSink struct {
	mu   sync.Mutex
	got  []hookReceived
	down bool
}

type hookReceived struct {
	sig  string
	body []byte
	ok   bool // answered 204
}

func (h *hookSink) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	down := h.down
	h.got = append(h.got, hookReceived{sig: r.Header.Get("Webhook-Signature"), body: b, ok: !down})
	h.mu.Unlock()
	if down {
		w.WriteHeader(500)
		return
	}
	w.WriteHeader(204)
}

func (h *hookSink) setDown(down bool) {
	h.mu.Lock()
	h.down = down
	h.mu.Unlock()
}

// triedFor counts the attempts mentioning evt, answered or not.
func (h *hookSink) triedFor(evt string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, d := range h.got {
		if strings.Contains(string(d.body), evt) {
			n++
		}
	}
	return n
}

// signedFor returns the deliveries mentioning evt, answered 204, whose
// signature verifies with secret.
func (h *hookSink) signedFor(t *testing.T, evt, secret string) int {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, d := range h.got {
		if d.ok && strings.Contains(string(d.body), evt) {
			require.NoError(t, webhooks.Verify(d.sig, d.body, secret, time.Now(), 5*time.Minute), "signature of %s", d.body)
			n++
		}
	}
	return n
}

// newHookEndpoint makes a unit through nd and an endpoint of it, for
// every webhook type, that posts to sink on a loopback port: the unit,
// the endpoints' route, the endpoint's id and its secret.
func newHookEndpoint(t *testing.T, nd *node, sink *hookSink) (unit apptest.Unit, base, id, secret string) {
	t.Helper()
	rcv := httptest.NewServer(sink)
	t.Cleanup(rcv.Close)
	u := nd.NewUnit("Hooks")
	base = "/admin/v1/business-units/" + u.ID + "/webhook-endpoints"
	st, ep := retry503(t, func() (int, map[string]any) {
		return do(t, "POST", nd.URL+base, nd.Admin, map[string]any{"url": rcv.URL, "eventTypes": webhooks.HookTypes()})
	})
	require.Equal(t, 201, st, "%v", ep)
	return u, base, ep["id"].(string), ep["secret"].(string)
}

// TestSharedWebhookEndpoints: an endpoint made through one node is listed
// on every node and delivered to by the owner of an event written through
// another node, signed with its secret, and still after the node it was
// made on is lost; a change and a deletion through one survivor reach the
// other.
func TestSharedWebhookEndpoints(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes := startNodes(t, 3)
	a, b := nodes[0], nodes[1]
	sink := &hookSink{}
	u, base, epID, secret := newHookEndpoint(t, a, sink)
	listedEverywhere := func(ns []*node) func() bool {
		return func() bool {
			for _, nd := range ns {
				st, l := do(t, "GET", nd.URL+base, nd.Admin, nil)
				data, _ := l["data"].([]any)
				if st != 200 || len(data) != 1 || data[0].(map[string]any)["id"] != epID {
					return false
				}
			}
			return true
		}
	}
	eventually(t, 10*time.Second, "the endpoint listed on every node", listedEverywhere(nodes))

	// An event created and sold through B, owned by a node other than A
	// (C when the placement allows it).
	var evt, owner string
	for range 20 {
		st, ev := retry503(t, func() (int, map[string]any) {
			return do(t, "POST", b.URL+"/v1/events", u.Secret, map[string]any{"name": "Drop", "timezone": "UTC", "startsAt": "2030-06-01T09:00:00Z"})
		})
		require.Equal(t, 201, st, "%v", ev)
		evt = ev["id"].(string)
		owner = ownerOf(t, b, evt)
		if owner == nodes[2].name {
			break
		}
	}
	require.NotEqual(t, a.name, owner, "the event landed on the node the endpoint was made on")
	t.Logf("endpoint made on %s, event %s owned by %s, sold through %s", a.name, evt, owner, b.name)
	typeID := openFreeType(t, b.URL, u.Secret, evt)

	// A registration through B: its webhook is queued and sent by the
	// owner, which must know the endpoint made on A.
	register := func(via *node, i int) {
		t.Helper()
		st, r, _ := doIdemRetry(t, via.URL+"/v1/events/"+evt+"/registrations", u.Secret, fmt.Sprintf("hook-reg-%s-%d", evt, i),
			map[string]any{"email": fmt.Sprintf("guest%d@example.com", i), "registrationTypeId": typeID})
		require.Equal(t, 201, st, "%v", r)
	}
	register(b, 1)
	eventually(t, 20*time.Second, "a signed webhook for the registration", func() bool { return sink.signedFor(t, evt, secret) >= 1 })
	delivered := sink.signedFor(t, evt, secret)

	// A, where the endpoint was made, is lost: the others still list it
	// and its webhooks still go out.
	require.NoError(t, a.Main.Close())
	eventually(t, 30*time.Second, "the endpoint listed after "+a.name+"'s loss", listedEverywhere(nodes[1:]))
	register(b, 2)
	eventually(t, 60*time.Second, "a signed webhook for a registration after "+a.name+"'s loss", func() bool {
		return sink.signedFor(t, evt, secret) > delivered
	})

	// A change through one survivor reaches the other: disabled through
	// C, it is listed disabled on B.
	c := nodes[2]
	st, m := retry503(t, func() (int, map[string]any) {
		return do(t, "POST", c.URL+base+"/"+epID+"/disable", c.Admin, nil)
	})
	require.Equal(t, 200, st, "%v", m)
	eventually(t, 10*time.Second, "the endpoint disabled on "+b.name, func() bool {
		_, e := do(t, "GET", b.URL+base+"/"+epID, b.Admin, nil)
		return e["enabled"] == false
	})
	// Deleted through B, it is gone on C too.
	st, m = retry503(t, func() (int, map[string]any) { return do(t, "DELETE", b.URL+base+"/"+epID, b.Admin, nil) })
	require.Equal(t, 200, st, "%v", m)
	eventually(t, 10*time.Second, "the endpoint deleted on "+c.name, func() bool {
		st, _ := do(t, "GET", c.URL+base+"/"+epID, c.Admin, nil)
		return st == 404
	})
}

// TestWebhookPendingOnALostOwner: a webhook whose delivery its event's
// owner could not make yet (the endpoint answers 500) is not lost with
// that owner: the event's next owner fans it out again, and it arrives
// once the endpoint is back.
func TestWebhookPendingOnALostOwner(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes := startNodes(t, 3)
	a := nodes[0]
	sink := &hookSink{down: true}
	u, _, _, secret := newHookEndpoint(t, a, sink)

	// An event owned by a node other than A, sold through A.
	var evt, owner string
	for range 20 {
		st, ev := retry503(t, func() (int, map[string]any) {
			return do(t, "POST", a.URL+"/v1/events", u.Secret, map[string]any{"name": "Drop", "timezone": "UTC", "startsAt": "2030-06-01T09:00:00Z"})
		})
		require.Equal(t, 201, st, "%v", ev)
		evt = ev["id"].(string)
		if owner = ownerOf(t, a, evt); owner != "" && owner != a.name {
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
	typeID := openFreeType(t, a.URL, u.Secret, evt)
	st, r, _ := doIdemRetry(t, a.URL+"/v1/events/"+evt+"/registrations", u.Secret, "pending-hook-"+evt,
		map[string]any{"email": "guest@example.com", "registrationTypeId": typeID})
	require.Equal(t, 201, st, "%v", r)
	eventually(t, 20*time.Second, "the owner tried the webhook", func() bool { return sink.triedFor(evt) >= 1 })
	require.Zero(t, sink.signedFor(t, evt, secret))

	// The owner is lost with the delivery still pending; then the
	// endpoint comes back.
	require.NoError(t, b.Main.Close())
	sink.setDown(false)
	eventually(t, 60*time.Second, "the webhook delivered by the event's next owner", func() bool {
		return sink.signedFor(t, evt, secret) >= 1
	})
	var survivor string
	eventually(t, 30*time.Second, "a survivor owns the event", func() bool {
		survivor = ownerOf(t, a, evt)
		return survivor != "" && survivor != b.name
	})
	t.Logf("%s lost with the webhook pending; delivered by %s", b.name, survivor)
}

// openFreeType adds a free ticket type of 10 places to evt through the
// node at base (retried while ownership settles), opens it and publishes
// the event: the type's id.
func openFreeType(t *testing.T, base, secret, evt string) string {
	t.Helper()
	st, tt := retry503(t, func() (int, map[string]any) {
		return do(t, "POST", base+"/v1/events/"+evt+"/ticket-types", secret, map[string]any{"name": "GA", "capacity": 10, "priceAmount": 0})
	})
	require.Equal(t, 201, st, "%v", tt)
	typeID := tt["id"].(string)
	st, m := do(t, "PATCH", base+"/v1/events/"+evt+"/ticket-types/"+typeID, secret, map[string]any{"status": "open"})
	require.Equal(t, 200, st, "%v", m)
	st, m = do(t, "PATCH", base+"/v1/events/"+evt, secret, map[string]any{"status": "published"})
	require.Equal(t, 200, st, "%v", m)
	return typeID
}
