package api_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	thttp "ticketd/http"
	"ticketd/http/api"
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

// TestAPIFeedLargePageAsPieces: a page large enough to be written to the
// connection as its kept renderings (thttp.PiecesAppender, no copy into a
// body buffer) is byte for byte the page the changes make when written
// the old way, each copied (api.FeedPage.AppendJSON of the same changes,
// read in small pages, which the server copies into its body buffer):
// when first read (rendering them) and when read again (the kept ones).
func TestAPIFeedLargePageAsPieces(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)
	x := newDoorFx(t, f)
	ev := x.eventID
	tt := apiOpenType(t, x.u.dev, ev, map[string]any{"name": "Bulk", "capacity": 1000})
	for i := range 80 {
		apiWant(t, x.u.dev.Do("POST", "/v1/events/"+ev+"/orders", map[string]any{"email": fmt.Sprintf("b%d@example.com", i), "items": apiTicket(tt)}), 201)
	}
	start := base64.RawURLEncoding.EncodeToString([]byte("f1:" + ev + ":0"))
	read := func(limit int, after string) []byte {
		t.Helper()
		r := x.u.dev.Do("GET", fmt.Sprintf("/v1/events/%s/changes?limit=%d&after=%s", ev, limit, after), nil)
		require.Equalf(t, 200, r.Status, "body: %s", r.Body)
		return r.Body
	}
	first := read(1000, start)
	require.Greater(t, len(first), 64<<10, "a page written as pieces")
	again := read(1000, start)
	require.Equal(t, string(first), string(again), "read again: the kept renderings")

	// The same changes in pages of 5 (small: copied), then the page they
	// make written the old way.
	var whole api.FeedPage
	var p feedPage
	require.NoError(t, json.Unmarshal(first, &p))
	after := start
	for {
		var small feedPage
		require.NoError(t, json.Unmarshal(read(5, after), &small))
		for _, ch := range small.Data {
			at, err := time.Parse(time.RFC3339Nano, ch.OccurredAt)
			require.NoError(t, err)
			whole.Data = append(whole.Data, api.FeedChange{Cursor: ch.Cursor, Seq: ch.Seq, Type: ch.Type,
				OccurredAt: api.FeedTime(at), Object: api.FeedObject(ch.Object)})
		}
		after = small.NextCursor
		if !small.HasMore {
			break
		}
	}
	whole.NextCursor, whole.HasMore = p.NextCursor, p.HasMore
	require.Len(t, whole.Data, len(p.Data))
	requireGapFree(t, p.Data, 1)
	require.Equal(t, string(whole.AppendJSON(nil)), string(first), "the page as pieces is the page copied")
}
