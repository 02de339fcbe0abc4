package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	nethttp "net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/app"
	"ticketd/directory"
	thttp "ticketd/http"
)

// TestDoorBatchAcrossRestarts: a batch of scans is one log record and one
// feed record (issue 33); through the real service on Pebble, restarted
// between batches:
//   - the feed holds one checkin.created per admitted scan, in batch
//     order, gap-free after the registrations, each object the check-in
//     as GET .../checkins answers it (names with quotes, HTML characters
//     and non-ASCII included), read from the ring before a restart and
//     from the store after it, from any position inside a batch;
//   - after a restart the replayed records give the same check-ins, the
//     same feed pages, and a re-sent batch (same scanIds) answers the
//     same verdicts and records nothing (no check-in, no feed entry);
//   - an offline scan keeps its scannedAt as checkedInAt;
//   - a second device's batch finds the first's check-ins.
func TestDoorBatchAcrossRestarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var m *app.Main
	open := func() {
		cfg := app.DefaultConfig()
		cfg.Addr, cfg.DataDir, cfg.AdminToken = "127.0.0.1:0", dir, apiAdminToken
		cfg.RateLimitPerMinute, cfg.StorefrontKeyPerMinute, cfg.StorefrontIPPerMinute = 0, 0, 0
		cfg.StorefrontCatalogIPPerMinute, cfg.AuthFailuresPerMinute = 0, 0
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		m = app.NewMain(cfg, io.Discard)
		require.NoError(t, m.Open())
	}
	closeMain := func() {
		if tr, ok := nethttp.DefaultTransport.(*nethttp.Transport); ok {
			tr.CloseIdleConnections()
		}
		require.NoError(t, m.Close())
	}
	open()
	t.Cleanup(func() {
		if m != nil {
			closeMain()
		}
	})
	un, err := m.System().CreateUnit(context.Background(), "door batch")
	require.NoError(t, err)
	_, sk, err := m.System().CreateKey(context.Background(), actors.NewKeySpec{UnitID: un.ID, Type: directory.Secret, Version: thttp.CurrentVersion})
	require.NoError(t, err)
	client := func() *apiClient { return newAPIClient(t, m.URL).WithKey(sk) }
	c := client()
	ev := apiPublished(t, c)
	tt := apiOpenType(t, c, ev, nil)
	names := []string{"Ann", `Bo "Boss" <b&b>`, "Zoë", "", "Émile", "Kai", "Lu", "Mo", "Ny", "Ola"}
	var regs []map[string]any
	for i, n := range names {
		regs = append(regs, apiWant(t, c.Do("POST", "/v1/events/"+ev+"/registrations",
			map[string]any{"email": fmt.Sprintf("p%d@door.io", i), "name": n, "registrationTypeId": tt}), 201))
	}
	device := func(name string) string {
		d := apiWant(t, c.Do("POST", "/v1/events/"+ev+"/devices", map[string]any{"name": name}), 201)
		init := apiWant(t, newAPIClient(t, m.URL).Do("POST", "/door/v1/device/initialize", map[string]any{"setupCode": apiS(d, "setupCode")}), 201)
		return apiS(init, "key")
	}
	keyA, keyB := device("A"), device("B")
	now := time.Now().UTC()
	offlineAt := now.Add(-2 * time.Hour).Truncate(time.Second)
	scan := func(id string, i int, extra map[string]any) map[string]any {
		return apiMerge(map[string]any{"scanId": id, "registrationId": apiS(regs[i], "id"), "subjectType": "event",
			"scannedAt": now.Format(time.RFC3339)}, extra)
	}
	batch1 := []map[string]any{
		scan("a0", 0, map[string]any{"offline": true, "scannedAt": offlineAt.Format(time.RFC3339)}),
		scan("a1", 1, nil), scan("a2", 2, nil), scan("a0b", 0, nil), // a pass twice in one batch
		{"scanId": "a-none", "checkinCode": "CHK-NOPE", "subjectType": "event", "scannedAt": now.Format(time.RFC3339)},
		scan("a3", 3, nil), scan("a4", 4, nil), scan("a5", 5, nil),
	}
	send := func(key string, list []map[string]any) []byte {
		r := newAPIClient(t, m.URL).WithKey(key).Do("POST", "/door/v1/scans", map[string]any{"scans": list})
		require.Equalf(t, 200, r.Status, "body: %s", r.Body)
		return r.Body
	}
	first1 := send(keyA, batch1)
	var res1 struct {
		Results []struct {
			ScanID  string
			Verdict string
			Checkin map[string]any
		}
	}
	require.NoError(t, json.Unmarshal(first1, &res1))
	var verdicts []string
	for _, r := range res1.Results {
		verdicts = append(verdicts, r.Verdict)
	}
	require.Equal(t, []string{"admitted", "admitted", "admitted", "already_checked_in", "refused", "admitted", "admitted", "admitted"}, verdicts)
	require.Equal(t, offlineAt.Format(time.RFC3339), res1.Results[0].Checkin["checkedInAt"], "an offline scan keeps its scannedAt")

	// checkins is the event's check-ins by id, as their list answers them.
	checkins := func() map[string]json.RawMessage {
		r := client().Do("GET", "/v1/events/"+ev+"/checkins?limit=100", nil)
		require.Equalf(t, 200, r.Status, "body: %s", r.Body)
		var l struct{ Data []json.RawMessage }
		require.NoError(t, json.Unmarshal(r.Body, &l))
		out := map[string]json.RawMessage{}
		for _, x := range l.Data {
			var o struct{ ID string }
			require.NoError(t, json.Unmarshal(x, &o))
			out[o.ID] = x
		}
		return out
	}
	// checkFeed reads the whole feed in pages of limit and checks its
	// check-in entries against the check-ins.
	checkFeed := func(limit int, wantCheckins []string) []feedChange {
		t.Helper()
		all, _ := feedAll(t, client(), ev, "", limit)
		requireGapFree(t, all, 1)
		byID := checkins()
		var got []string
		for _, ch := range all {
			if ch.Type != "checkin.created" {
				continue
			}
			id := feedObjectID(t, ch)
			got = append(got, id)
			require.JSONEq(t, string(byID[id]), string(ch.Object), "the feed's object of %s is its GET's", id)
		}
		require.Equal(t, wantCheckins, got, "one checkin.created per admitted scan, in batch order")
		return all
	}
	admittedIDs := func(body []byte) []string {
		var res struct {
			Results []struct {
				Verdict string
				Checkin struct{ ID string }
			}
		}
		require.NoError(t, json.Unmarshal(body, &res))
		var ids []string
		for _, r := range res.Results {
			if r.Verdict == "admitted" {
				ids = append(ids, r.Checkin.ID)
			}
		}
		return ids
	}
	want := admittedIDs(first1)
	require.Len(t, want, 6)
	before := checkFeed(4, want) // pages of 4 cut the batch's span
	require.Len(t, before, len(names)+6)
	checkinsBefore := checkins()

	// A restart: the log's compact record replays, the feed is read from
	// the store.
	closeMain()
	open()
	require.Equal(t, checkinsBefore, checkins(), "the same check-ins after a replay")
	after := checkFeed(3, want)
	require.Equal(t, before, after, "the same feed pages after a restart")
	// From a position inside the batch's span.
	mid := feedRead(t, client(), ev, map[string][]string{"after": {before[len(names)+1].Cursor}, "limit": {"2"}})
	require.Equal(t, before[len(names)+2:len(names)+4], mid.Data)

	// The batch again: the same answers, nothing recorded.
	require.JSONEq(t, string(first1), string(send(keyA, batch1)), "a re-sent batch answers the first verdicts")
	require.Equal(t, checkinsBefore, checkins(), "a re-sent batch records no check-in")
	again, _ := feedAll(t, client(), ev, "", 100)
	require.Equal(t, before, again, "a re-sent batch writes no feed entry")

	// Another device's batch finds the first's check-ins.
	body2 := send(keyB, []map[string]any{scan("b4", 4, nil), scan("b6", 6, nil), scan("b7", 7, map[string]any{"offline": true,
		"scannedAt": offlineAt.Format(time.RFC3339)}), scan("b5", 5, nil)})
	var res2 struct {
		Results []struct {
			Verdict      string
			FirstCheckin map[string]any
		}
	}
	require.NoError(t, json.Unmarshal(body2, &res2))
	require.Equal(t, "already_checked_in", res2.Results[0].Verdict)
	require.Equal(t, "admitted", res2.Results[1].Verdict)
	require.Equal(t, "admitted", res2.Results[2].Verdict)
	require.Equal(t, "already_checked_in", res2.Results[3].Verdict)
	want = append(want, admittedIDs(body2)...)
	before = checkFeed(5, want)

	closeMain()
	open()
	after = checkFeed(100, want)
	require.Equal(t, before, after, "the same feed after a second restart")
	require.JSONEq(t, string(body2), string(send(keyB, []map[string]any{scan("b4", 4, nil), scan("b6", 6, nil),
		scan("b7", 7, map[string]any{"offline": true, "scannedAt": offlineAt.Format(time.RFC3339)}), scan("b5", 5, nil)})),
		"a re-sent batch answers the same after a replay")
	require.Len(t, checkins(), 8)
}
