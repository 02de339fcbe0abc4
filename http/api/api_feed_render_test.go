package api_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	thttp "ticketd/http"
)

// TestAPIFeedRenderingsAgree: the feed's pages are built from each
// change's rendering, kept by the first reader of the newest changes and
// copied by the others. Through the real service, for every change type
// and every API version: a second read (copies of what the first kept)
// answers the very bytes of the first; after a restart, with nothing kept
// and every change read from the store and rendered afresh, the same
// bytes again. An order read from the feed (its rendering kept) and then
// cancelled shows both states: the kept rendering never answers for the
// later change, whose object is the order's GET now.
func TestAPIFeedRenderingsAgree(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)
	x := newDoorFx(t, f) // 3 registrations, one cancelled, a device
	ev := x.eventID
	tt := apiOpenType(t, x.u.dev, ev, map[string]any{"name": "Second"})
	ord := apiWant(t, x.u.dev.Do("POST", "/v1/events/"+ev+"/orders", map[string]any{"email": "buyer@example.com", "items": apiTicket(tt)}), 201)

	versions := thttp.KnownVersions()
	require.GreaterOrEqual(t, len(versions), 2)
	// From position 0, not from the oldest kept: a read from a position
	// is the one served from the newest changes kept in memory.
	start := base64.RawURLEncoding.EncodeToString([]byte("f1:" + ev + ":0"))
	read := func(c *apiClient, v string) []byte {
		t.Helper()
		r := c.WithHeader("service-version", v).Do("GET", "/v1/events/"+ev+"/changes?limit=1000&after="+start, nil)
		require.Equalf(t, 200, r.Status, "body: %s", r.Body)
		require.Equal(t, v, r.Header.Get("service-version"))
		return r.Body
	}
	// Read (and so render and keep) the order as placed.
	before := read(x.u.dev, thttp.CurrentVersion)
	var placed feedPage
	require.NoError(t, json.Unmarshal(before, &placed))
	require.Equal(t, "order.created", placed.Data[len(placed.Data)-1].Type)

	// Then change it, check in, and make two door conflicts.
	cancelled := apiWant(t, x.u.dev.Do("POST", "/v1/events/"+ev+"/orders/"+apiS(ord, "orderNumber")+"/cancel", nil), 200)
	scans(t, x.dev, scanOf("a", x.regs[0], nil))
	_, d2 := doorDevice(t, f, x.u, ev, nil)
	r := scans(t, d2,
		scanOf("c1", x.regs[0], map[string]any{"offline": true, "admittedOffline": true}),
		scanOf("c2", x.regs[2], map[string]any{"offline": true, "admittedOffline": true}))
	require.Equal(t, []any{"already_checked_in", "refused"}, []any{r[0]["verdict"], r[1]["verdict"]})

	pages := map[string][]byte{}
	for _, v := range versions {
		first := read(x.u.dev, v)
		assert.Equalf(t, string(first), string(read(x.u.dev, v)), "version %s: a read of kept renderings", v)
		pages[v] = first
	}
	var all feedPage
	require.NoError(t, json.Unmarshal(pages[thttp.CurrentVersion], &all))
	requireGapFree(t, all.Data, 1)
	types := map[string]int{}
	var orderObjs []map[string]any
	for _, ch := range all.Data {
		types[ch.Type]++
		if ch.Type == "order.created" || ch.Type == "order.updated" {
			var o map[string]any
			require.NoError(t, json.Unmarshal(ch.Object, &o))
			orderObjs = append(orderObjs, o)
		}
	}
	for _, typ := range []string{"registration.created", "registration.updated", "order.created", "order.updated", "checkin.created", "checkin.conflict"} {
		assert.NotZerof(t, types[typ], "the feed has a %s change", typ)
	}
	require.Len(t, orderObjs, 2)
	assert.Equal(t, "open", orderObjs[0]["status"], "order.created: the order as placed, though its rendering was kept before the cancel")
	assert.Equal(t, "cancelled", orderObjs[1]["status"])
	assert.Equal(t, fmt.Sprint(cancelled), fmt.Sprint(orderObjs[1]), "order.updated: the order as its cancel answered")
	now := apiWant(t, x.u.dev.Do("GET", "/v1/events/"+ev+"/orders/"+apiS(ord, "orderNumber"), nil), 200)
	assert.Equal(t, fmt.Sprint(now), fmt.Sprint(orderObjs[1]), "order.updated: the order's GET now")
	// Registrations, orders and check-ins are the same in every version
	// (decisions §4), so is every page.
	for _, v := range versions {
		assert.Equalf(t, string(pages[thttp.CurrentVersion]), string(pages[v]), "version %s", v)
	}

	// After a restart nothing is kept: every change is read from the store
	// and rendered afresh, to the same bytes.
	f.s.Restart()
	dev := newAPIClient(t, f.s.URL).WithKey(x.u.Secret)
	for _, v := range versions {
		assert.Equalf(t, string(pages[v]), string(read(dev, v)), "version %s: rendered afresh after a restart", v)
	}
}
