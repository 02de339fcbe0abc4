package api

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/event"
	thttp "ticketd/http"
)

// freshFeedPage is the page of items as encoding/json writes it, each
// change built anew (no memo, no rendering kept): what a cached
// rendering must equal.
func freshFeedPage(t *testing.T, version, eventID string, p event.FeedPage) string {
	t.Helper()
	out := FeedPage{Data: []FeedChange{}, NextCursor: encodeFeedCursor(eventID, p.Next), HasMore: p.HasMore}
	for _, e := range p.Entries {
		out.Data = append(out.Data, FeedChange{Cursor: encodeFeedCursor(eventID, e.Seq), Seq: e.Seq, Type: e.Type,
			OccurredAt: FeedTime(e.At), Object: versionedFeedObject(feedObjectShape(version), e.Type, e.Object)})
	}
	b, err := json.Marshal(out)
	require.NoError(t, err)
	return string(b)
}

// TestFeedRenderingsCached: for every change type and API version, a
// page built from the renderings kept in the entries' memos is byte for
// byte the page rendered afresh (encoding/json of each change), on the
// first read (which renders and keeps) and on every later one (which
// copies what was kept); versions whose objects are the same share one
// rendering; an entry read without a memo (from the store) renders the
// same bytes.
func TestFeedRenderingsCached(t *testing.T) {
	const eventID = "evt_01m80je06d7aca5stxyc0g1dea"
	at := time.Date(2026, 11, 29, 9, 30, 1, 234_567_891, time.UTC)
	objects := map[string]string{
		event.FeedRegistrationCreated: `{"id":"reg_1","status":"confirmed","name":"Zoë \"Z\" \u003cz@x\u003e","responses":null}`,
		event.FeedRegistrationUpdated: `{"id":"reg_1","status":"cancelled","name":"Zoë \"Z\" \u003cz@x\u003e","responses":null}`,
		event.FeedOrderCreated:        `{"id":"ord_1","status":"open","items":[{"quantity":1,"amount":0}],"totalAmount":0}`,
		event.FeedOrderUpdated:        `{"id":"ord_1","status":"cancelled","items":[{"quantity":1,"amount":0}],"totalAmount":0}`,
		event.FeedCheckinCreated:      `{"id":"chk_1","registrationId":"reg_1","subjectType":"event"}`,
		event.FeedCheckinConflict:     `{"id":"dcf_1","reason":"ALREADY_CHECKED_IN","firstCheckin":{"id":"chk_1"}}`,
	}
	var items, stored []event.FeedItem
	memos := map[uint64]*event.FeedMemo{}
	for i, typ := range event.FeedTypes() {
		seq := uint64(i + 1)
		it := event.FeedItem{Seq: seq, Type: typ, At: at.Add(time.Duration(i) * time.Millisecond), Object: []byte(objects[typ])}
		memos[seq] = new(event.FeedMemo)
		items = append(items, it.WithMemo(memos[seq]))
		stored = append(stored, it)
	}
	require.Len(t, items, len(objects), "every change type")
	page := event.FeedPage{Entries: items, Next: uint64(len(items)), Last: uint64(len(items)) + 3, HasMore: true}
	fromStore := event.FeedPage{Entries: stored, Next: page.Next, Last: page.Last, HasMore: true}
	var shared [][]byte
	for _, v := range thttp.KnownVersions() {
		for read := range 3 {
			want := freshFeedPage(t, v, eventID, page)
			got := feedPageOf(v, eventID, page)
			require.Equalf(t, want, string(got.AppendJSON(nil)), "version %s, read %d", v, read)
			require.Equal(t, want, string(feedPageOf(v, eventID, fromStore).AppendJSON(nil)), "read without memos, version %s", v)
			for i, it := range items {
				kept, ok := it.Memo().Load(feedObjectShape(v))
				require.Truef(t, ok, "change %d's rendering is kept", it.Seq)
				require.Equal(t, string(kept), string(got.wire[i]))
				if shared == nil || len(shared) <= i {
					shared = append(shared, kept)
				} else if feedObjectShape(v) == feedObjectShape(thttp.KnownVersions()[0]) {
					require.Samef(t, &shared[i][0], &kept[0], "version %s copies the rendering already kept", v)
				}
			}
		}
	}
	// A page appended to a buffer that holds bytes already keeps them.
	got := feedPageOf(thttp.CurrentVersion, eventID, page)
	require.Equal(t, "prefix"+freshFeedPage(t, thttp.CurrentVersion, eventID, page), string(got.AppendJSON([]byte("prefix"))))
	empty := feedPageOf(thttp.CurrentVersion, eventID, event.FeedPage{Next: 9})
	require.Equal(t, freshFeedPage(t, thttp.CurrentVersion, eventID, event.FeedPage{Next: 9}), string(empty.AppendJSON(nil)))
}

// TestFeedRenderingNotStale: a record's later change renders its own
// object, not the rendering kept for an earlier change of the same record
// (a rendering belongs to an entry, never to a record), and the earlier
// change still answers the record as it was then.
func TestFeedRenderingNotStale(t *testing.T) {
	const eventID = "evt_1"
	at := time.Date(2026, 11, 29, 9, 30, 0, 0, time.UTC)
	mk := func(seq uint64, typ, status string) event.FeedItem {
		it := event.FeedItem{Seq: seq, Type: typ, At: at, Object: fmt.Appendf(nil, `{"id":"ord_1","status":%q}`, status)}
		return it.WithMemo(new(event.FeedMemo))
	}
	created := mk(1, event.FeedOrderCreated, "open")
	first := feedPageOf(thttp.CurrentVersion, eventID, event.FeedPage{Entries: []event.FeedItem{created}, Next: 1, Last: 1})
	require.Contains(t, string(first.AppendJSON(nil)), `"status":"open"`)
	updated := mk(2, event.FeedOrderUpdated, "cancelled")
	both := feedPageOf(thttp.CurrentVersion, eventID, event.FeedPage{Entries: []event.FeedItem{created, updated}, Next: 2, Last: 2})
	var p struct {
		Data []struct {
			Seq    uint64
			Object struct{ ID, Status string }
		}
	}
	require.NoError(t, json.Unmarshal(both.AppendJSON(nil), &p))
	require.Len(t, p.Data, 2)
	require.Equal(t, "open", p.Data[0].Object.Status, "the order as it was at seq 1")
	require.Equal(t, "cancelled", p.Data[1].Object.Status, "the order as it is at seq 2")
	require.Equal(t, freshFeedPage(t, thttp.CurrentVersion, eventID, event.FeedPage{Entries: []event.FeedItem{created, updated}, Next: 2, Last: 2}),
		string(both.AppendJSON(nil)))
}

// TestFeedPagePieces: a page's pieces (what the server writes to the
// connection of a large page) are byte for byte its AppendJSON and the
// page rendered afresh; the changes one reader renders are one piece
// (rendered one after another into one buffer), and so are they for the
// readers who copy them; a page of renderings made apart is a piece for
// each.
func TestFeedPagePieces(t *testing.T) {
	const eventID = "evt_01m80je06d7aca5stxyc0g1dea"
	at := time.Date(2026, 11, 29, 9, 30, 1, 234_567_891, time.UTC)
	items := make([]event.FeedItem, 50)
	for i := range items {
		it := event.FeedItem{Seq: uint64(i + 1), Type: event.FeedOrderCreated, At: at.Add(time.Duration(i) * time.Millisecond),
			Object: fmt.Appendf(nil, `{"id":"ord_%d","status":"open","name":"Zoë \"%d\""}`, i, i)}
		items[i] = it.WithMemo(new(event.FeedMemo))
	}
	concat := func(ps [][]byte) string {
		var b []byte
		for _, p := range ps {
			b = append(b, p...)
		}
		return string(b)
	}
	page := func(from, to int) event.FeedPage {
		return event.FeedPage{Entries: items[from:to], Next: uint64(to), Last: 60, HasMore: true}
	}
	// Entries 10-19 rendered apart, by a reader of those alone.
	feedPageOf(thttp.CurrentVersion, eventID, page(10, 20))
	for read := range 2 {
		p := feedPageOf(thttp.CurrentVersion, eventID, page(20, 50))
		want := freshFeedPage(t, thttp.CurrentVersion, eventID, page(20, 50))
		require.Equal(t, want, string(p.AppendJSON(nil)))
		ps := p.AppendPieces(nil)
		require.Equal(t, want, concat(ps))
		require.Lenf(t, ps, 3, "read %d: the head, the 30 changes rendered together, the tail", read)
	}
	// From 0: 0-9 rendered now (one run), 10-19 (another), 20-49 (a third).
	p := feedPageOf(thttp.CurrentVersion, eventID, page(0, 50))
	want := freshFeedPage(t, thttp.CurrentVersion, eventID, page(0, 50))
	require.Equal(t, want, string(p.AppendJSON(nil)))
	ps := p.AppendPieces(nil)
	require.Equal(t, want, concat(ps))
	require.Len(t, ps, 5)
	// Empty, and without memos (read from the store).
	empty := event.FeedPage{Next: 9, Last: 9}
	require.Equal(t, freshFeedPage(t, thttp.CurrentVersion, eventID, empty), concat(feedPageOf(thttp.CurrentVersion, eventID, empty).AppendPieces(nil)))
	stored := make([]event.FeedItem, len(items))
	for i, it := range items {
		stored[i] = event.FeedItem{Seq: it.Seq, Type: it.Type, At: it.At, Object: it.Object}
	}
	sp := event.FeedPage{Entries: stored, Next: 50, Last: 60, HasMore: true}
	require.Equal(t, freshFeedPage(t, thttp.CurrentVersion, eventID, sp), concat(feedPageOf(thttp.CurrentVersion, eventID, sp).AppendPieces(nil)))
}

// TestFeedPageShared: a page answered to several followers (its memo set,
// as the event's actor does when one commit wakes them at one position)
// is made into its wire form once: every reader gets the bytes of the
// page rendered afresh, the later ones the first one's pieces (not a
// list of their own); a page without a memo is made per reader, to the
// same bytes.
func TestFeedPageShared(t *testing.T) {
	const eventID = "evt_01m80je06d7aca5stxyc0g1dea"
	at := time.Date(2026, 11, 29, 9, 30, 1, 234_567_891, time.UTC)
	items := make([]event.FeedItem, 40)
	for i := range items {
		it := event.FeedItem{Seq: uint64(i + 1), Type: event.FeedOrderCreated, At: at.Add(time.Duration(i) * time.Millisecond),
			Object: fmt.Appendf(nil, `{"id":"ord_%d","status":"open"}`, i)}
		items[i] = it.WithMemo(new(event.FeedMemo))
	}
	concat := func(ps [][]byte) string {
		var b []byte
		for _, p := range ps {
			b = append(b, p...)
		}
		return string(b)
	}
	plain := event.FeedPage{Entries: items, Next: 40, Last: 45, HasMore: true}
	want := freshFeedPage(t, thttp.CurrentVersion, eventID, plain)
	shared := plain.WithMemo(new(event.FeedPageMemo))
	var first [][]byte
	for _, v := range thttp.KnownVersions() {
		for read := range 3 {
			p := feedPageOf(v, eventID, shared)
			require.Equalf(t, want, string(p.AppendJSON(nil)), "version %s, read %d", v, read)
			ps := p.AppendPieces(nil)
			require.Equal(t, want, concat(ps))
			if first == nil {
				first = ps
				continue
			}
			require.Len(t, ps, len(first))
			for i := range ps {
				require.Samef(t, &first[i][0], &ps[i][0], "version %s, read %d, piece %d: the first reader's", v, read, i)
			}
		}
	}
	kept, ok := shared.Memo().Load(feedObjectShape(thttp.CurrentVersion))
	require.True(t, ok)
	require.NotNil(t, kept.(FeedPage).pieces)
	// Without a memo: made for its reader (no pieces kept), same bytes.
	p := feedPageOf(thttp.CurrentVersion, eventID, plain)
	require.Nil(t, p.pieces)
	require.Equal(t, want, concat(p.AppendPieces(nil)))
	var none *event.FeedPageMemo
	_, ok = none.Load("x")
	require.False(t, ok)
	require.Equal(t, 1, none.Store("x", 1))
}
