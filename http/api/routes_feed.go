package api

import (
	"context"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/internal/jsonenc"
	"ticketd/ops"
)

// The change feed (decisions §20): GET /v1/events/{eventId}/changes, and
// the Feed-Cursor header of the registrations, orders and check-ins lists.

// FeedCursorHeader is the header of a list's feed position.
const FeedCursorHeader = "Feed-Cursor"

// feedCursorDoc documents the Feed-Cursor header of a list route.
var feedCursorDoc = map[string]string{FeedCursorHeader: "The change feed's position this list reflects (read with the list, " +
	"atomically): pass it as after to GET /v1/events/{eventId}/changes to follow every change made since, with nothing " +
	"missed and nothing counted twice. When paging, keep the first page's."}

// feedCursorPrefix starts every feed cursor (before base64url): a version
// and the event, so a cursor of another event (or garbage) is refused
// instead of read as a position.
const feedCursorPrefix = "f1:"

// feedAskMargin is how much longer than its wait a feed read may take to
// be answered (the store read, an activation, a forwarded hop).
const feedAskMargin = 10 * time.Second

// FeedQuery is the query of the change feed.
type FeedQuery struct {
	After string `query:"after" v:"maxLen=512" doc:"A cursor: a change's cursor, a page's nextCursor or a list's Feed-Cursor header. The page starts after it. Absent: at the oldest change kept."`
	Limit *int   `query:"limit" v:"min=1,max=1000" doc:"Page size, 1 to 1000 (default 100)."`
	Types string `query:"types" v:"maxLen=512" doc:"Comma-separated change types to return (default all): registration.created, registration.updated, order.created, order.updated, checkin.created, checkin.conflict. Changes of other types are passed over: nextCursor moves past them."`
	Wait  *int   `query:"wait" v:"min=0,max=30" doc:"Seconds (0 to 30, default 0) to wait for a change when there is none after the cursor: the call answers as soon as one commits, or with an empty page when the wait ends."`
}

// FeedObject is a change's record as its GET answered at that change: a
// registration, an order or a check-in, by the change's type.
type FeedObject []byte

// MarshalJSON writes the stored JSON as is.
func (o FeedObject) MarshalJSON() ([]byte, error) {
	if len(o) == 0 {
		return []byte("null"), nil
	}
	return o, nil
}

// AnyOf documents the object's schema: one of the record types.
func (FeedObject) AnyOf() []any {
	return []any{event.Registration{}, event.Order{}, event.Checkin{}, event.DoorConflict{}}
}

// FeedChange is one change of the feed.
type FeedChange struct {
	Cursor     string     `json:"cursor" doc:"This change's position: pass it as after to read what follows it."`
	Seq        uint64     `json:"seq" doc:"The change's number in the event's feed: 1, 2, 3... without gaps (a types filter leaves some out)."`
	Type       string     `json:"type" v:"enum=registration.created|registration.updated|order.created|order.updated|checkin.created|checkin.conflict" doc:"What changed: registration.* objects are registrations, order.* orders, checkin.created a check-in, checkin.conflict a door conflict (as GET .../door-conflicts lists it)."`
	OccurredAt FeedTime   `json:"occurredAt" doc:"When the change happened (UTC, to the millisecond)."`
	Object     FeedObject `json:"object" doc:"The record as its GET answered just after this change, in the key's API version."`
}

// FeedTime is a change's time: RFC 3339 in UTC to the millisecond (a
// follower measures its lag by it; the records' own times are to the
// second).
type FeedTime time.Time

const feedTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// MarshalJSON writes the time as a JSON string.
func (t FeedTime) MarshalJSON() ([]byte, error) { return t.AppendJSON(nil), nil }

// AppendJSON appends the time as a JSON string.
func (t FeedTime) AppendJSON(b []byte) []byte {
	b = append(b, '"')
	b = time.Time(t).UTC().AppendFormat(b, feedTimeLayout)
	return append(b, '"')
}

// JSONSchema documents the time.
func (FeedTime) JSONSchema() map[string]any {
	return map[string]any{"type": "string", "format": "date-time", "maxLength": 35}
}

// FeedPage is the answer of the change feed.
type FeedPage struct {
	// eventID makes the cursors of changes that have none (AppendJSON
	// writes them without allocating).
	eventID string
	// wire holds the changes already rendered (feedPageOf): Data is then
	// empty and AppendJSON, the server's way of writing a page, writes
	// these.
	wire [][]byte
	// pieces, on a page shared by several followers (event.FeedPageMemo),
	// are AppendPieces' slices, joined once for all of them.
	pieces     [][]byte
	Data       []FeedChange `json:"data"`
	NextCursor string       `json:"nextCursor" doc:"Where to continue: pass it as after. Always set, also on an empty page."`
	HasMore    bool         `json:"hasMore" doc:"True when more changes follow already (read again at once); false when the feed ends here for now (read again with wait)."`
}

// AppendJSON writes the page as encoding/json would (the objects are
// stored JSON, copied as they are; a page rendered by feedPageOf is the
// copies of its changes' renderings, into a buffer grown once). The
// server writes a large page as its pieces instead (AppendPieces).
func (p FeedPage) AppendJSON(b []byte) []byte {
	if p.wire != nil {
		n := len(`{"data":[],"nextCursor":,"hasMore":false}`) + len(p.NextCursor) + 2
		for _, w := range p.wire {
			n += len(w)
		}
		b = slices.Grow(b, n)
	}
	b = append(b, `{"data":[`...)
	for i, w := range p.wire {
		if i == 0 {
			w = w[1:] // each rendering starts with the comma that follows its predecessor
		}
		b = append(b, w...)
	}
	for i := range p.Data {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendFeedChange(b, p.eventID, &p.Data[i])
	}
	return p.appendTail(b)
}

// appendTail writes what follows the changes.
func (p FeedPage) appendTail(b []byte) []byte {
	b = append(b, `],"nextCursor":`...)
	b = jsonenc.AppendString(b, p.NextCursor)
	b = append(b, `,"hasMore":`...)
	b = strconv.AppendBool(b, p.HasMore)
	return append(b, '}')
}

// feedPageHead starts every page.
var feedPageHead = []byte(`{"data":[`)

// AppendPieces appends the page as the slices that make AppendJSON's
// bytes (thttp.PiecesAppender): the head, the kept renderings themselves
// (not copies; renderings made one after another in one buffer, as a
// reader renders a run of new changes, are one slice) and the tail. The
// server writes a large page so, each follower's page costing no copy of
// its changes.
func (p FeedPage) AppendPieces(dst [][]byte) [][]byte {
	if p.pieces != nil {
		return append(dst, p.pieces...)
	}
	if p.wire == nil {
		return append(dst, p.AppendJSON(nil))
	}
	dst = append(dst, feedPageHead)
	var run []byte
	for i, w := range p.wire {
		if i == 0 {
			w = w[1:]
		}
		switch {
		case run == nil:
			run = w
		case len(w) > 0 && len(run) < cap(run) && &run[:len(run)+1][len(run)] == &w[0]:
			// w follows run in the same buffer: one slice.
			run = run[:len(run)+len(w)]
		default:
			dst = append(dst, run)
			run = w
		}
	}
	if run != nil {
		dst = append(dst, run)
	}
	return append(dst, p.appendTail(make([]byte, 0, len(p.NextCursor)+40)))
}

// appendFeedChange writes one change of a page of eventID's feed (its
// cursor made from its seq when it has none).
func appendFeedChange(b []byte, eventID string, ch *FeedChange) []byte {
	b = append(b, `{"cursor":`...)
	if ch.Cursor == "" && eventID != "" {
		b = append(b, '"')
		b = appendFeedCursor(b, eventID, ch.Seq)
		b = append(b, '"')
	} else {
		b = jsonenc.AppendString(b, ch.Cursor)
	}
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, ch.Seq, 10)
	b = append(b, `,"type":`...)
	b = jsonenc.AppendString(b, ch.Type)
	b = append(b, `,"occurredAt":`...)
	b = ch.OccurredAt.AppendJSON(b)
	b = append(b, `,"object":`...)
	if len(ch.Object) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, ch.Object...)
	}
	return append(b, '}')
}

func (a *api) feedRoutes() []thttp.Route {
	return []thttp.Route{
		{Surface: thttp.Developer, Method: "GET", Path: "/v1/events/{eventId}/changes", OperationID: "listChanges", Tag: "Changes",
			Summary: "Follow the event's change feed: registrations, orders and check-ins as they change, oldest first, each with a gap-free seq",
			Query:   FeedQuery{}, Success: 200, Response: FeedPage{}, Errors: []int{400, 404, 410},
			Handle: a.listChanges},
	}
}

// encodeFeedCursor is the cursor of position seq of eventID's feed.
func encodeFeedCursor(eventID string, seq uint64) string {
	return string(appendFeedCursor(nil, eventID, seq))
}

// appendFeedCursor appends the cursor of position seq of eventID's feed
// (base64url of "f1:<eventId>:<seq>").
func appendFeedCursor(b []byte, eventID string, seq uint64) []byte {
	var raw [128]byte
	r := append(raw[:0], feedCursorPrefix...)
	r = append(r, eventID...)
	r = append(r, ':')
	r = strconv.AppendUint(r, seq, 10)
	return base64.RawURLEncoding.AppendEncode(b, r)
}

// decodeFeedCursor reads a cursor of eventID's feed.
func decodeFeedCursor(c, eventID string) (uint64, error) {
	bad := func(reason string) error {
		return thttp.NewError(400, "after: "+reason, event.Detail{Field: "after", Reason: reason})
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, bad("not a feed cursor")
	}
	rest, ok := strings.CutPrefix(string(b), feedCursorPrefix)
	i := strings.LastIndexByte(rest, ':')
	if !ok || i <= 0 {
		return 0, bad("not a feed cursor")
	}
	seq, err := strconv.ParseUint(rest[i+1:], 10, 64)
	if err != nil {
		return 0, bad("not a feed cursor")
	}
	if rest[:i] != eventID {
		return 0, bad("a cursor of another event's feed")
	}
	return seq, nil
}

// feedTypes parses the types filter.
func feedTypes(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, t := range strings.Split(s, ",") {
		t = strings.TrimSpace(t)
		if event.FeedTypeCode(t) == 0 {
			reason := "unknown type " + strconv.Quote(t) + "; one of " + strings.Join(event.FeedTypes(), ", ")
			return nil, thttp.NewError(400, "types: "+reason, event.Detail{Field: "types", Reason: reason})
		}
		out = append(out, t)
	}
	return out, nil
}

func (a *api) listChanges(c *thttp.Ctx) (any, error) {
	id, err := a.eventOf(c)
	if err != nil {
		return nil, err
	}
	var q FeedQuery
	if err := c.BindQuery(&q); err != nil {
		return nil, err
	}
	types, err := feedTypes(q.Types)
	if err != nil {
		return nil, err
	}
	var after uint64
	from := q.After != ""
	if from {
		if after, err = decodeFeedCursor(q.After, id); err != nil {
			return nil, err
		}
	}
	limit := event.FeedLimitDefault
	if q.Limit != nil {
		limit = *q.Limit
	}
	wait := time.Duration(0)
	if q.Wait != nil {
		wait = time.Duration(*q.Wait) * time.Second
	}
	deadline := time.Now().Add(wait)
	first := true
	for {
		left := max(time.Until(deadline), 0)
		ctx, cancel := context.WithTimeout(contextBG, left+feedAskMargin)
		page, err := ops.Do(ctx, a.ops, id, event.ReadFeed{After: after, From: from, Limit: limit, Types: types, Wait: left})
		cancel()
		if err != nil {
			return nil, ops.MapErr(err)
		}
		if first && from && after > page.Last {
			return nil, thttp.NewError(400, "after: the cursor is ahead of the feed", event.Detail{Field: "after", Reason: "ahead of the feed"})
		}
		if page.Expired {
			return nil, thttp.NewError(410, "the changes after this cursor are older than the feed keeps ("+
				strconv.Itoa(int(event.FeedRetention/(24*time.Hour)))+" days): list the records again and follow the list's Feed-Cursor").
				WithReason(event.ReasonCursorExpired)
		}
		first = false
		if len(page.Entries) > 0 || left <= 0 || page.HasMore {
			return feedPageOf(c.Version(), id, page), nil
		}
		// Nothing of the types asked for yet: wait on from where the
		// feed got to.
		after, from = page.Next, true
		if time.Until(deadline) <= 0 {
			return feedPageOf(c.Version(), id, page), nil
		}
	}
}

// feedPageOf is the wire form of a page in the key's API version: each
// change rendered once per shape (feedObjectShape) by the first reader
// that asks for it and kept in its entry's memo (event.FeedMemo), so
// every other follower of the event copies the bytes (the entries of
// the ring kept in memory have one; those read from the store, the
// older ones, are rendered for their reader alone). A rendering starts
// with the comma that separates it from the change before, and the
// changes a reader renders go into buffers of feedRenderChunk, one after
// another, so a page of them is a few slices (AppendPieces).
//
// A page answered to several followers (one commit woke them at the same
// position) carries a memo (event.FeedPageMemo): its wire form, pieces
// joined, is made by the first and taken by the others.
func feedPageOf(version, eventID string, p event.FeedPage) FeedPage {
	shape := feedObjectShape(version)
	m := p.Memo()
	if m == nil {
		return renderFeedPage(shape, eventID, p)
	}
	if v, ok := m.Load(shape); ok {
		return v.(FeedPage)
	}
	out := renderFeedPage(shape, eventID, p)
	out.pieces = out.AppendPieces(nil)
	return m.Store(shape, out).(FeedPage)
}

// renderFeedPage is feedPageOf for one reader.
func renderFeedPage(shape, eventID string, p event.FeedPage) FeedPage {
	out := FeedPage{eventID: eventID, wire: make([][]byte, len(p.Entries)), HasMore: p.HasMore,
		NextCursor: encodeFeedCursor(eventID, p.Next)}
	var missing []int32 // the entries to render here
	for i, e := range p.Entries {
		if w, ok := e.Memo().Load(shape); ok {
			out.wire[i] = w
		} else {
			missing = append(missing, int32(i))
		}
	}
	if len(missing) == 0 {
		return out
	}
	if p.Entries[missing[0]].Memo() != nil {
		// The followers a commit wakes ask for the same new changes at
		// once: one renders them, the others wait for it and copy (each
		// rendering them too made a change cost ten renderings, not one).
		mu := &feedRenderLocks[feedRenderLock(eventID)]
		mu.Lock()
		defer mu.Unlock()
		left := missing[:0]
		for _, i := range missing {
			if w, ok := p.Entries[i].Memo().Load(shape); ok {
				out.wire[i] = w
			} else {
				left = append(left, i)
			}
		}
		missing = left
	}
	// The renderings go into chunks of feedRenderChunk, one after another;
	// a chunk's are kept and shared only once it is done (no append moves
	// it any more).
	var buf []byte
	var idx []int32
	var ends []int // where each of idx's renderings ends in buf
	done := func() {
		start := 0
		for k, i := range idx {
			w := buf[start:ends[k]:ends[k]]
			if k+1 < len(idx) {
				// Let a reader see that the next rendering follows.
				w = buf[start:ends[k]:len(buf)]
			}
			out.wire[i] = p.Entries[i].Memo().Store(shape, w)
			start = ends[k]
		}
		buf, idx, ends = nil, idx[:0], ends[:0]
	}
	for _, i := range missing {
		e := p.Entries[i]
		need := len(e.Object) + feedChangeOverhead
		if buf != nil && cap(buf)-len(buf) < need {
			done()
		}
		if buf == nil {
			buf = make([]byte, 0, max(feedRenderChunk, need))
		}
		buf = append(buf, ',')
		buf = renderFeedChange(buf, eventID, shape, e)
		idx, ends = append(idx, i), append(ends, len(buf))
	}
	done()
	return out
}

// feedRenderChunk is the room of a buffer of renderings: a size class of
// the allocator, whose memory is used again, where a buffer for a whole
// page of new changes (a megabyte) was fresh pages each time, faulted in
// as they were written (the rendering's copy of an object cost ten times
// a copy in the profile).
const feedRenderChunk = 32 << 10

// feedRenderLocks serialize the renderings of an event's new changes
// (feedPageOf), by a hash of the event id.
var feedRenderLocks [64]sync.Mutex

// feedRenderLock is the index of eventID's lock in feedRenderLocks.
func feedRenderLock(eventID string) int {
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(eventID); i++ {
		h = (h ^ uint32(eventID[i])) * 16777619
	}
	return int(h % uint32(len(feedRenderLocks)))
}

// feedChangeOverhead is about the bytes of a rendering around its object
// (cursor, seq, type, occurredAt).
const feedChangeOverhead = 160

// renderFeedChange appends the wire form of feed entry e of eventID's
// feed, its object in shape's form.
func renderFeedChange(b []byte, eventID, shape string, e event.FeedItem) []byte {
	ch := FeedChange{Seq: e.Seq, Type: e.Type, OccurredAt: FeedTime(e.At), Object: versionedFeedObject(shape, e.Type, e.Object)}
	return appendFeedChange(b, eventID, &ch)
}

// feedObjectShape is the shape of the feed's objects in API version v,
// named by the newest version that answers them the same: the key of a
// change's rendering (versions that share a shape share renderings) and
// the one thing versionedFeedObject reads, so the two cannot disagree.
// Registrations, orders, check-ins and door conflicts are the same in
// every known version (decisions §4: only the availability object
// differs), so every version has the current one's.
func feedObjectShape(v string) string { return thttp.CurrentVersion }

// versionedFeedObject is a stored object (stored in the current version)
// in the objects' shape (feedObjectShape): the one place a version that
// changes a record type changes the feed's objects.
func versionedFeedObject(shape, typ string, obj []byte) FeedObject { return FeedObject(obj) }

// setFeedCursor answers a list's feed position as the Feed-Cursor header.
func setFeedCursor(c *thttp.Ctx, eventID string, seq uint64) {
	c.RequestCtx().Response.Header.Set(FeedCursorHeader, encodeFeedCursor(eventID, seq))
}

// listWithFeedCursor is the handler of a list route that answers the
// feed position the list reflects (read with the list by the event's
// actor, so list-then-follow misses nothing and counts nothing twice).
func listWithFeedCursor[C event.Command, T any](a *api) thttp.HandlerFunc {
	return func(c *thttp.Ctx) (any, error) {
		res, err := eventCmd[C](a, nil)(c)
		if err != nil {
			return nil, err
		}
		if l, ok := res.(event.List[T]); ok {
			setFeedCursor(c, c.Param("eventId"), l.FeedSeq)
		}
		return res, nil
	}
}
