package api_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	nethttp "net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/app"
	"ticketd/directory"
	thttp "ticketd/http"
	"ticketd/http/api"
)

// feedChange is one change of the feed as the tests read it.
type feedChange struct {
	Cursor     string          `json:"cursor"`
	Seq        uint64          `json:"seq"`
	Type       string          `json:"type"`
	OccurredAt string          `json:"occurredAt"`
	Object     json.RawMessage `json:"object"`
}

type feedPage struct {
	Data       []feedChange `json:"data"`
	NextCursor string       `json:"nextCursor"`
	HasMore    bool         `json:"hasMore"`
}

// feedRead reads one page of the event's feed with query q and wants 200.
func feedRead(t testing.TB, c *apiClient, eventID string, q url.Values) feedPage {
	t.Helper()
	r := c.Do("GET", "/v1/events/"+eventID+"/changes?"+q.Encode(), nil)
	require.Equalf(t, 200, r.Status, "body: %s", r.Body)
	var p feedPage
	require.NoError(t, json.Unmarshal(r.Body, &p))
	require.NotEmpty(t, p.NextCursor, "nextCursor is always set")
	return p
}

// feedAll reads the feed from cursor after ("" from the oldest) to its end.
func feedAll(t testing.TB, c *apiClient, eventID, after string, limit int) ([]feedChange, string) {
	t.Helper()
	var out []feedChange
	for range 10_000 {
		q := url.Values{"limit": {strconv.Itoa(limit)}}
		if after != "" {
			q.Set("after", after)
		}
		p := feedRead(t, c, eventID, q)
		out = append(out, p.Data...)
		after = p.NextCursor
		if !p.HasMore {
			return out, after
		}
	}
	t.Fatal("the feed never ended")
	return nil, ""
}

// feedObjectID is the id of a change's object.
func feedObjectID(t testing.TB, ch feedChange) string {
	var o struct{ ID string }
	require.NoError(t, json.Unmarshal(ch.Object, &o))
	return o.ID
}

// requireGapFree checks seqs count up by one from first.
func requireGapFree(t testing.TB, chs []feedChange, first uint64) {
	t.Helper()
	for i, ch := range chs {
		require.Equalf(t, first+uint64(i), ch.Seq, "change %d", i)
	}
}

// TestAPIFeedRules: the feed's seqs count from 1 without gaps, oldest
// first; objects are the records as their GETs answered at the change;
// types filter; pages; every bad input answers 400 naming its field.
func TestAPIFeedRules(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)
	u := f.unit(t)
	ev := apiPublished(t, u.dev)
	tt := apiOpenType(t, u.dev, ev, map[string]any{"capacity": 1, "allowWaitlist": true})

	empty := feedRead(t, u.dev, ev, nil)
	assert.Empty(t, empty.Data)
	assert.False(t, empty.HasMore)

	r1 := apiRegister(t, u.dev, ev, tt, "one@example.com")
	r2 := apiRegister(t, u.dev, ev, tt, "two@example.com") // waitlisted
	require.Equal(t, "waitlisted", r2["status"])
	regs := "/v1/events/" + ev + "/registrations/"
	cancelled := apiWant(t, u.dev.Do("POST", regs+apiS(r1, "id")+"/cancel", nil), 200) // promotes r2
	chk := apiWant(t, u.dev.Do("POST", "/v1/events/"+ev+"/checkins", map[string]any{"registrationId": apiS(r2, "id"), "subjectType": "event"}), 201)
	ord := apiWant(t, u.dev.Do("POST", "/v1/events/"+ev+"/orders", map[string]any{"email": "three@example.com",
		"items": apiTicket(apiOpenType(t, u.dev, ev, map[string]any{"name": "Second"}))}), 201)

	all, _ := feedAll(t, u.dev, ev, "", 100)
	var types []string
	for _, ch := range all {
		types = append(types, ch.Type+" "+feedObjectID(t, ch))
	}
	assert.Equal(t, []string{
		"registration.created " + apiS(r1, "id"),
		"registration.created " + apiS(r2, "id"),
		"registration.updated " + apiS(r1, "id"),
		"registration.updated " + apiS(r2, "id"),
		"checkin.created " + apiS(apiM(chk, "checkin"), "id"),
		"order.created " + apiS(ord, "id"),
	}, types)
	requireGapFree(t, all, 1)
	// The object is the record at that change, not now.
	var first, third map[string]any
	require.NoError(t, json.Unmarshal(all[0].Object, &first))
	require.NoError(t, json.Unmarshal(all[2].Object, &third))
	assert.Equal(t, "confirmed", first["status"], "r1 as created")
	delete(cancelled, "created")
	assert.Equal(t, fmt.Sprint(cancelled), fmt.Sprint(third), "r1 as its cancel answered")
	var orderNow map[string]any
	require.NoError(t, json.Unmarshal(all[5].Object, &orderNow))
	assert.Equal(t, fmt.Sprint(apiWant(t, u.dev.Do("GET", "/v1/events/"+ev+"/orders/"+apiS(ord, "id"), nil), 200)), fmt.Sprint(orderNow))

	// Pages of 2 give the same changes; the cursor of a change continues after it.
	paged, _ := feedAll(t, u.dev, ev, "", 2)
	assert.Equal(t, all, paged)
	rest := feedRead(t, u.dev, ev, url.Values{"after": {all[3].Cursor}})
	assert.Equal(t, all[4:], rest.Data)

	// types: only those; nextCursor passes the others.
	onlyOrders := feedRead(t, u.dev, ev, url.Values{"types": {"order.created,order.updated"}})
	require.Len(t, onlyOrders.Data, 1)
	assert.Equal(t, uint64(6), onlyOrders.Data[0].Seq)
	upd := feedRead(t, u.dev, ev, url.Values{"types": {"registration.updated"}, "limit": {"1"}})
	require.Len(t, upd.Data, 1)
	assert.Equal(t, uint64(3), upd.Data[0].Seq)
	assert.True(t, upd.HasMore)
	upd2 := feedRead(t, u.dev, ev, url.Values{"types": {"registration.updated"}, "after": {upd.NextCursor}})
	require.Len(t, upd2.Data, 1)
	assert.Equal(t, uint64(4), upd2.Data[0].Seq)
	none := feedRead(t, u.dev, ev, url.Values{"types": {"checkin.conflict"}})
	assert.Empty(t, none.Data)
	assert.Equal(t, all[5].Cursor, none.NextCursor, "the filter's page still moves the cursor to the end")

	// Bad input.
	bad := u.dev.AllowInvalidRequest()
	path := "/v1/events/" + ev + "/changes?"
	for _, q := range []string{"limit=0", "limit=1001", "limit=x", "wait=31", "wait=-1"} {
		field := q[:len("limit")]
		if q[0] == 'w' {
			field = "wait"
		}
		apiWant400(t, bad.Do("GET", path+q, nil), field)
	}
	e := apiWantErr(t, bad.Do("GET", path+"types=registration.created,order.deleted", nil), 400, "INVALID_ARGUMENT")
	assert.Equal(t, []string{"types"}, apiFields(e))
	assert.Contains(t, e["message"], `"order.deleted"`)
	apiWant400(t, bad.Do("GET", path+"after=%25%25garbage", nil), "after")
	apiWant400(t, bad.Do("GET", path+"after="+base64.RawURLEncoding.EncodeToString([]byte("f1:nope")), nil), "after")
	other := apiPublished(t, u.dev)
	otherCursor := feedRead(t, u.dev, other, nil).NextCursor
	e = apiWantErr(t, bad.Do("GET", path+"after="+otherCursor, nil), 400, "INVALID_ARGUMENT")
	assert.Contains(t, e["message"], "another event")
	ahead := base64.RawURLEncoding.EncodeToString([]byte("f1:" + ev + ":99"))
	apiWant400(t, bad.Do("GET", path+"after="+ahead, nil), "after")
	// Another unit's event is not found, never forbidden.
	stranger := f.unit(t)
	apiWantErr(t, stranger.dev.Do("GET", "/v1/events/"+ev+"/changes", nil), 404, "NOT_FOUND")

	// The lists answer their feed position.
	for _, list := range []string{"registrations", "orders", "checkins"} {
		r := u.dev.Do("GET", "/v1/events/"+ev+"/"+list, nil)
		require.Equal(t, 200, r.Status)
		assert.Equal(t, all[5].Cursor, r.Header.Get("Feed-Cursor"), list)
	}
}

// TestAPIFeedLongPoll: a waiting read answers as soon as a change commits
// (no polling), and an idle one answers an empty page when its wait ends.
func TestAPIFeedLongPoll(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)
	u := f.unit(t)
	ev := apiPublished(t, u.dev)
	tt := apiOpenType(t, u.dev, ev, nil)
	cursor := feedRead(t, u.dev, ev, nil).NextCursor

	type result struct {
		p  feedPage
		at time.Time
	}
	got := make(chan result, 1)
	go func() {
		p := feedRead(t, u.dev, ev, url.Values{"after": {cursor}, "wait": {"30"}})
		got <- result{p, time.Now()}
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case r := <-got:
		t.Fatalf("the wait answered before any change: %+v", r.p)
	default:
	}
	reg := apiRegister(t, u.dev, ev, tt, "poll@example.com")
	registered := time.Now()
	select {
	case r := <-got:
		require.Len(t, r.p.Data, 1)
		assert.Equal(t, apiS(reg, "id"), feedObjectID(t, r.p.Data[0]))
		assert.Less(t, r.at.Sub(registered), 5*time.Second, "woken by the commit, not the wait's end")
	case <-time.After(20 * time.Second):
		t.Fatal("the waiting read did not answer the change")
	}

	// A wait for a type that does not come ends empty, with the cursor
	// past what it passed over.
	apiRegister(t, u.dev, ev, tt, "poll2@example.com")
	t0 := time.Now()
	p := feedRead(t, u.dev, ev, url.Values{"after": {cursor}, "wait": {"1"}, "types": {"order.created"}})
	assert.Empty(t, p.Data)
	assert.GreaterOrEqual(t, time.Since(t0), 900*time.Millisecond)
	all, _ := feedAll(t, u.dev, ev, "", 100)
	assert.Equal(t, all[len(all)-1].Cursor, p.NextCursor)
}

// feedClock is a settable clock for the actors (the feed's retention).
type feedClock struct{ off atomic.Int64 }

func (c *feedClock) now() time.Time { return time.Now().Add(time.Duration(c.off.Load())) }

// TestAPIFeedRetention: changes are kept 30 days; a cursor older than
// what is kept answers 410 CURSOR_EXPIRED, a read without a cursor starts
// at the oldest kept, and the periodic trim deletes them.
func TestAPIFeedRetention(t *testing.T) {
	t.Parallel()
	clock := &feedClock{}
	f := newAPIFx(t, func(c *app.Config) {
		if c.Tune == nil {
			c.Tune = &app.Tuning{}
		}
		c.Tune.Actors = func(a *actors.Config) { a.Now = clock.now }
	})
	u := f.unit(t)
	ev := apiPublished(t, u.dev)
	tt := apiOpenType(t, u.dev, ev, nil)
	start := feedRead(t, u.dev, ev, nil).NextCursor
	apiRegister(t, u.dev, ev, tt, "old1@example.com")
	apiRegister(t, u.dev, ev, tt, "old2@example.com")
	old, _ := feedAll(t, u.dev, ev, "", 100)
	require.Len(t, old, 2)

	clock.off.Store(int64(29 * 24 * time.Hour))
	kept, _ := feedAll(t, u.dev, ev, start, 100)
	assert.Equal(t, old, kept, "29 days: still kept")

	clock.off.Store(int64(31 * 24 * time.Hour))
	r3 := apiRegister(t, u.dev, ev, tt, "new@example.com")
	for _, after := range []string{start, old[0].Cursor} {
		e := apiWantErr(t, u.dev.Do("GET", "/v1/events/"+ev+"/changes?after="+after, nil), 410, "INVALID_ARGUMENT")
		assert.Equal(t, "CURSOR_EXPIRED", e["reason"])
	}
	// The last old change's cursor misses nothing: it still reads.
	p := feedRead(t, u.dev, ev, url.Values{"after": {old[1].Cursor}})
	require.Len(t, p.Data, 1)
	assert.Equal(t, uint64(3), p.Data[0].Seq)
	fromOldest, _ := feedAll(t, u.dev, ev, "", 100)
	require.Len(t, fromOldest, 1, "without after: from the oldest kept")
	assert.Equal(t, apiS(r3, "id"), feedObjectID(t, fromOldest[0]))

	n, err := f.s.Sys.TrimFeeds()
	require.NoError(t, err)
	assert.Equal(t, 2, n, "the trim deletes the two expired entries")
	e := apiWantErr(t, u.dev.Do("GET", "/v1/events/"+ev+"/changes?after="+start, nil), 410, "INVALID_ARGUMENT")
	assert.Equal(t, "CURSOR_EXPIRED", e["reason"])
	again, _ := feedAll(t, u.dev, ev, "", 100)
	assert.Equal(t, fromOldest, again)
}

// TestAPIFeedListThenFollow: registrations made while a client pages
// through the list and then follows the feed from the first page's
// Feed-Cursor: every registration is seen exactly once.
func TestAPIFeedListThenFollow(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)
	u := f.unit(t)
	ev := apiPublished(t, u.dev)
	tt := apiOpenType(t, u.dev, ev, map[string]any{"capacity": 10_000})
	for i := range 30 {
		apiRegister(t, u.dev, ev, tt, fmt.Sprintf("before%d@example.com", i))
	}
	var made sync.Map
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := u.dev.WithT(t)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				r := c.Do("POST", "/v1/events/"+ev+"/registrations",
					map[string]any{"email": fmt.Sprintf("during%d-%d@example.com", w, i), "registrationTypeId": tt})
				if r.Status == 201 {
					var m map[string]any
					_ = json.Unmarshal(r.Body, &m)
					made.Store(m["id"], true)
				}
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	seen := map[string]int{}
	cursor, feedCursor := "", ""
	for {
		q := "?limit=7"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		r := u.dev.Do("GET", "/v1/events/"+ev+"/registrations"+q, nil)
		m := apiWant(t, r, 200)
		if feedCursor == "" {
			feedCursor = r.Header.Get("Feed-Cursor")
			require.NotEmpty(t, feedCursor)
		}
		for _, id := range apiIDs(t, m) {
			seen[id]++
		}
		next, _ := m["nextCursor"].(string)
		if next == "" {
			break
		}
		cursor = next
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()
	follow, _ := feedAll(t, u.dev, ev, feedCursor, 13)
	for _, ch := range follow {
		if ch.Type == "registration.created" {
			seen[feedObjectID(t, ch)]++
		}
	}
	all := apiData(t, apiWant(t, u.dev.Do("GET", "/v1/events/"+ev+"/registrations?limit=1", nil), 200))
	require.NotEmpty(t, all)
	n := 0
	made.Range(func(k, _ any) bool {
		n++
		assert.Equalf(t, 1, seen[k.(string)], "registration %s made while listing", k)
		return true
	})
	require.Greater(t, n, 0, "registrations were made while listing")
	for id, c := range seen {
		assert.Equalf(t, 1, c, "%s seen %d times", id, c)
	}
	assert.Len(t, seen, 30+n, "every registration exactly once")
}

// TestAPIFeedRestart: a cursor read before a restart continues after it
// with no gap (seqs come from the log, entries from the store).
func TestAPIFeedRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open := func() *app.Main {
		cfg := app.DefaultConfig()
		cfg.Addr, cfg.DataDir, cfg.AdminToken = "127.0.0.1:0", dir, apiAdminToken
		cfg.RateLimitPerMinute, cfg.StorefrontKeyPerMinute, cfg.StorefrontIPPerMinute = 0, 0, 0
		cfg.StorefrontCatalogIPPerMinute, cfg.AuthFailuresPerMinute = 0, 0
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		m := app.NewMain(cfg, io.Discard)
		require.NoError(t, m.Open())
		return m
	}
	m := open()
	un, err := m.System().CreateUnit(context.Background(), "restart")
	require.NoError(t, err)
	_, sk, err := m.System().CreateKey(context.Background(), actors.NewKeySpec{UnitID: un.ID, Type: directory.Secret, Version: thttp.CurrentVersion})
	require.NoError(t, err)
	c := newAPIClient(t, m.URL).WithKey(sk)
	ev := apiPublished(t, c)
	tt := apiOpenType(t, c, ev, nil)
	for i := range 5 {
		apiRegister(t, c, ev, tt, fmt.Sprintf("r%d@example.com", i))
	}
	page1 := feedRead(t, c, ev, url.Values{"limit": {"3"}})
	require.Len(t, page1.Data, 3)
	if tr, ok := nethttp.DefaultTransport.(*nethttp.Transport); ok {
		tr.CloseIdleConnections()
	}
	require.NoError(t, m.Close())

	m = open()
	t.Cleanup(func() {
		if tr, ok := nethttp.DefaultTransport.(*nethttp.Transport); ok {
			tr.CloseIdleConnections()
		}
		_ = m.Close()
	})
	c = newAPIClient(t, m.URL).WithKey(sk)
	apiRegister(t, c, ev, tt, "after@example.com")
	rest, _ := feedAll(t, c, ev, page1.NextCursor, 100)
	require.Len(t, rest, 3)
	requireGapFree(t, append(page1.Data, rest...), 1)
	assert.Equal(t, "registration.created", rest[2].Type)
}

// TestAPIFeedWebhookSeq: a webhook receiver on loopback gets each
// registration.created with the seq of that change in the feed.
func TestAPIFeedWebhookSeq(t *testing.T) {
	t.Parallel()
	f := startHookService(t, 5)
	u := f.unit(t)
	adm := f.admin(t)
	rc := newHookReceiver(t, 0)
	ep := apiWant(t, adm.Do("POST", "/admin/v1/business-units/"+u.ID+"/webhook-endpoints",
		map[string]any{"url": rc.srv.URL, "eventTypes": []string{"registration.created", "checkin.created"}}), 201)
	rc.trust(apiS(ep, "secret"))
	ev := apiPublished(t, u.dev)
	tt := apiOpenType(t, u.dev, ev, nil)
	var regs []string
	for i := range 4 {
		regs = append(regs, apiS(apiRegister(t, u.dev, ev, tt, fmt.Sprintf("hook%d@example.com", i)), "id"))
	}
	apiWant(t, u.dev.Do("POST", "/v1/events/"+ev+"/checkins", map[string]any{"registrationId": regs[0], "subjectType": "event"}), 201)
	require.Eventually(t, func() bool { return len(rc.deliveries()) == 5 }, 10*time.Second, 10*time.Millisecond)
	all, _ := feedAll(t, u.dev, ev, "", 100)
	seqOf := map[string]uint64{}
	for _, ch := range all {
		seqOf[ch.Type+" "+feedObjectID(t, ch)] = ch.Seq
	}
	for _, d := range rc.deliveries() {
		var b struct {
			Type    string
			EventID string
			Seq     uint64
			Data    struct{ ID string }
		}
		require.NoError(t, json.Unmarshal(d.Body, &b))
		assert.Equal(t, ev, b.EventID)
		want, ok := seqOf[b.Type+" "+b.Data.ID]
		require.Truef(t, ok, "no feed change for webhook %s %s", b.Type, b.Data.ID)
		assert.Equal(t, want, b.Seq, "webhook %s %s", b.Type, b.Data.ID)
	}

	// Replay from a seq: the webhooks of that change and later, once each,
	// oldest first, the same bodies.
	base := "/admin/v1/business-units/" + u.ID + "/webhook-endpoints/" + apiS(ep, "id") + "/replay"
	from := seqOf["registration.created "+regs[2]]
	res := apiWant(t, adm.Do("POST", base, map[string]any{"eventId": ev, "fromSeq": from}), 202)
	assert.EqualValues(t, 3, res["queued"], "registrations 3 and 4 and the check-in")
	require.Eventually(t, func() bool { return len(rc.deliveries()) == 8 }, 10*time.Second, 10*time.Millisecond)
	ds := rc.deliveries()
	byID := map[string][]byte{}
	for _, d := range ds[:5] {
		byID[d.ID] = d.Body
	}
	var seqs []uint64
	for _, d := range ds[5:] {
		assert.Equal(t, string(byID[d.ID]), string(d.Body), "the same body")
		var b struct{ Seq uint64 }
		require.NoError(t, json.Unmarshal(d.Body, &b))
		seqs = append(seqs, b.Seq)
	}
	assert.Equal(t, []uint64{from, from + 1, from + 2}, seqs)
	// Replay since a time: everything.
	res = apiWant(t, adm.Do("POST", base, map[string]any{"since": "2000-01-01T00:00:00Z"}), 202)
	assert.EqualValues(t, 5, res["queued"])
	// Bad input.
	apiWant400(t, adm.Do("POST", base, map[string]any{"fromSeq": 2}), "eventId")
	apiWant400(t, adm.Do("POST", base, map[string]any{}), "fromSeq")
	apiWant400(t, adm.AllowInvalidRequest().Do("POST", base, map[string]any{"eventId": ev, "fromSeq": 0}), "fromSeq")
	apiWant400(t, adm.Do("POST", base, map[string]any{"eventId": ev, "fromSeq": 2, "since": "2000-01-01T00:00:00Z"}), "since")
	apiWantErr(t, adm.Do("POST", "/admin/v1/business-units/"+u.ID+"/webhook-endpoints/whep_nope/replay", map[string]any{"since": "2000-01-01T00:00:00Z"}), 404, "NOT_FOUND")
}

// TestFeedPageAppendJSON: the feed page's hand-written JSON is what
// encoding/json writes for it.
func TestFeedPageAppendJSON(t *testing.T) {
	at, _ := time.Parse(time.RFC3339Nano, "2026-08-22T10:00:00.123456789Z")
	for _, p := range []api.FeedPage{
		{Data: []api.FeedChange{}, NextCursor: "ZjE6ZXZ0XzE6MA"},
		{Data: []api.FeedChange{
			{Cursor: "a", Seq: 1, Type: "registration.created", OccurredAt: api.FeedTime(at), Object: api.FeedObject(`{"id":"reg_1","name":null}`)},
			{Cursor: "b", Seq: 18446744073709551615, Type: "order.updated", OccurredAt: api.FeedTime(at.Truncate(time.Second)), Object: api.FeedObject(`{"id":"ord_1"}`)},
		}, NextCursor: "b", HasMore: true},
	} {
		want, err := json.Marshal(p)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(p.AppendJSON(nil)))
	}
}
