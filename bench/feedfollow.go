package bench

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/bench/load"
)

// Followers is how many integrators follow the event's change feed during
// the feed-follow drop (decisions §20).
const Followers = 20

// followWait is the long poll of a follower (the feed's maximum).
const followWait = 30

// FeedFollowReport is the flash sale beside Followers long-polling its
// event's change feed, as a ratio to the same drop without them (rounds
// interleaved in one run), with the followers' lag (a change's occurredAt
// to its arrival at the follower) and whether each saw every change once,
// in order.
type FeedFollowReport struct {
	Followers int `json:"followers"`
	Rounds    int `json:"rounds"`
	// AloneRPS and FollowRPS are the medians of the drops of each kind;
	// Ratio is the median of RoundRatios, each round's drop beside the
	// followers over its drop alone.
	AloneRPS    float64   `json:"aloneRps"`
	FollowRPS   float64   `json:"followRps"`
	Ratio       float64   `json:"ratio"`
	RoundRatios []float64 `json:"roundRatios"`
	// CPU per order (median of the drops of each kind) of the service
	// and of the load generator (buyers, and followers when they run).
	ServerUsAlone     float64 `json:"serverUsAlone"`
	ServerUsFollow    float64 `json:"serverUsFollow"`
	GeneratorUsAlone  float64 `json:"generatorUsAlone"`
	GeneratorUsFollow float64 `json:"generatorUsFollow"`
	Changes           int64   `json:"changes"`        // changes each follower read, summed over rounds
	Reads             int64   `json:"reads"`          // feed requests of all followers
	BytesPerChange    float64 `json:"bytesPerChange"` // page bytes the followers read per change
	LagP50Ms          float64 `json:"lagP50Ms"`
	LagP99Ms          float64 `json:"lagP99Ms"`
	LagMaxMs          float64 `json:"lagMaxMs"`
	// ExactlyOnce: every follower saw seqs from its start to the feed's
	// end, each once, in order, in every round.
	ExactlyOnce bool   `json:"exactlyOnce"`
	Problem     string `json:"problem,omitempty"`
}

// feedFollower is one integrator: a connection of its own, a cursor and
// the seq it saw last.
type feedFollower struct {
	mu     sync.Mutex // guards what follow writes after the start
	c      *load.Client
	eid    string
	key    string
	cursor string
	last   uint64
	lags   []float64 // ms
	reads  int64
	bytes  int64 // of the pages read
	reqErr error
	bad    string // the first rule broken
	// body is the follower's page buffer, read into again for every page
	// (as a careful client keeps one): fasthttp's pooled body buffers
	// are sized for the buyers' small answers and dropped a megabyte page
	// after each read, so every page was a fresh megabyte, zeroed and
	// faulted in (a third of the followers' CPU in the generator).
	body []byte
	// curPre is the base64url of the cursor prefix "f1:<event>:" cut to
	// whole 3-byte groups, the part every cursor of the event starts
	// with; cursorSeq decodes only what follows it.
	curPre  []byte
	curTail string // the prefix's bytes after curPre's
}

// follow reads the feed until stop is closed and it has reached seq end
// (end is set once the drop is over).
func (f *feedFollower) follow(stop <-chan struct{}, end *atomic.Uint64) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	for {
		select {
		case <-stop:
			if e := end.Load(); e > 0 && f.last >= e {
				return
			}
		default:
		}
		req.Reset()
		load.SetRequest(req, "GET", f.c.Base+"/v1/events/"+f.eid+"/changes?limit=1000&wait="+fmt.Sprint(followWait)+
			"&after="+url.QueryEscape(f.cursor), f.key)
		resp.StreamBody = true
		err := f.c.HC.DoTimeout(req, resp, (followWait+15)*time.Second)
		var body []byte
		if err == nil {
			body, err = f.readBody(resp)
		}
		got := time.Now()
		f.mu.Lock()
		f.reads++
		if err != nil || resp.StatusCode() != 200 {
			f.reqErr = fmt.Errorf("feed read: status %d %v %s", resp.StatusCode(), err, load.Truncate(body, 200))
			f.mu.Unlock()
			return
		}
		f.bytes += int64(len(body))
		next, err := f.take(body, got)
		if err != nil {
			f.bad = err.Error()
			f.mu.Unlock()
			return
		}
		f.cursor = next
		f.mu.Unlock()
	}
}

// readBody reads the streamed body of resp into the follower's buffer
// (grown, never given back) and closes the stream.
func (f *feedFollower) readBody(resp *fasthttp.Response) ([]byte, error) {
	defer resp.CloseBodyStream() //nolint:errcheck
	n := resp.Header.ContentLength()
	if n < 0 {
		return nil, fmt.Errorf("feed read: no Content-Length (%d)", n)
	}
	if cap(f.body) < n {
		f.body = make([]byte, n+n/4)
	}
	b := f.body[:n]
	if _, err := io.ReadFull(resp.BodyStream(), b); err != nil {
		return nil, fmt.Errorf("feed read: body: %w", err)
	}
	return b, nil
}

// take checks a feed page the follower read (at got) and moves it on:
// every change must be the one after the last it saw (a gap, a change
// seen twice or out of order is refused), its cursor must stand for its
// seq in this event's feed, its type be a feed type and its occurredAt a
// time (the lag is measured from it); the page must be whole (nothing
// after it, every change followed by the next or the page's end) and its
// nextCursor stand where its last change is. It answers the nextCursor.
//
// It reads the page without decoding the objects: a follower in the same
// process as the load must not spend the cores the service is measured
// on parsing records it does not look at (a JSON decoder of every page
// cost the drop more than the service's own work for the followers). It
// scans each change's envelope, which the service writes in a fixed
// member order (cursor, seq, type, occurredAt, object), and finds where
// an object ends by the next change's start, which no record of the
// feed holds (one that did would be refused: every change start must
// follow a change's end). feedEnd reads the whole feed with a JSON
// decoder once.
func (f *feedFollower) take(b []byte, got time.Time) (next string, err error) {
	const head, tail, hasMore = `{"data":[`, `],"nextCursor":"`, `","hasMore":`
	const cursorKey, seqKey, typeKey, atKey, objKey = `{"cursor":"`, `","seq":`, `,"type":"`, `","occurredAt":"`, `","object":`
	const between = `}},` // an object's end, its change's, and the next change
	if !bytes.HasPrefix(b, []byte(head)) {
		return "", fmt.Errorf("page does not start with %s: %s", head, load.Truncate(b, 100))
	}
	end := bytes.LastIndex(b, []byte(tail))
	if end < len(head) {
		return "", fmt.Errorf("page without nextCursor: %s", load.Truncate(b, 200))
	}
	rest := b[end+len(tail):]
	q := bytes.IndexByte(rest, '"')
	if q < 0 {
		return "", errors.New("page: nextCursor not closed")
	}
	next = string(rest[:q])
	switch string(rest[q:]) {
	case hasMore + "true}", hasMore + "false}":
	default:
		return "", fmt.Errorf("page ends with %q", load.Truncate(rest[q:], 100))
	}
	data := b[len(head):end] // the changes, each {...}, comma-separated
	for len(data) > 0 {
		if !bytes.HasPrefix(data, []byte(cursorKey)) {
			return "", fmt.Errorf("after seq %d: a change does not start with its cursor: %s", f.last, load.Truncate(data, 100))
		}
		data = data[len(cursorKey):]
		i := bytes.IndexByte(data, '"')
		if i < 0 {
			return "", fmt.Errorf("after seq %d: cursor not closed", f.last)
		}
		cursor := data[:i]
		data = data[i:]
		if !bytes.HasPrefix(data, []byte(seqKey)) {
			return "", fmt.Errorf("after seq %d: no seq after the cursor", f.last)
		}
		data = data[len(seqKey):]
		k := 0
		for k < len(data) && k < 20 && data[k] >= '0' && data[k] <= '9' {
			k++
		}
		seq, err := strconv.ParseUint(string(data[:k]), 10, 64)
		if err != nil {
			return "", fmt.Errorf("after seq %d: seq: %w", f.last, err)
		}
		data = data[k:]
		if seq != f.last+1 {
			return "", fmt.Errorf("seq %d after %d", seq, f.last)
		}
		if cs, err := f.cursorSeq(cursor); err != nil || cs != seq {
			return "", fmt.Errorf("seq %d has the cursor %q (seq %d, %v)", seq, cursor, cs, err)
		}
		if !bytes.HasPrefix(data, []byte(typeKey)) {
			return "", fmt.Errorf("seq %d: no type", seq)
		}
		data = data[len(typeKey):]
		i = bytes.IndexByte(data, '"')
		if i < 0 {
			return "", fmt.Errorf("seq %d: type not closed", seq)
		}
		if !feedType(data[:i]) {
			return "", fmt.Errorf("seq %d: type %q", seq, data[:i])
		}
		data = data[i:]
		if !bytes.HasPrefix(data, []byte(atKey)) {
			return "", fmt.Errorf("seq %d: no occurredAt", seq)
		}
		data = data[len(atKey):]
		i = bytes.IndexByte(data, '"')
		if i < 0 {
			return "", fmt.Errorf("seq %d: occurredAt not closed", seq)
		}
		at, err := parseFeedTime(data[:i])
		if err != nil {
			return "", fmt.Errorf("seq %d: occurredAt: %w", seq, err)
		}
		data = data[i:]
		if !bytes.HasPrefix(data, []byte(objKey)) || len(data) < len(objKey)+2 || data[len(objKey)] != '{' {
			return "", fmt.Errorf("seq %d: no object", seq)
		}
		data = data[len(objKey):]
		// The object, and the change, end where the next change starts
		// (which nothing else may look like) or at the end of the data.
		if j := bytes.Index(data, []byte(cursorKey)); j >= 0 {
			if j < 3 || string(data[j-3:j]) != between {
				return "", fmt.Errorf("a change's start inside seq %d's object: %s", seq, load.Truncate(data[max(j-20, 0):], 60))
			}
			data = data[j:]
		} else if data[len(data)-1] == '}' && data[len(data)-2] == '}' {
			data = nil
		} else {
			return "", fmt.Errorf("seq %d: the change is cut short: %s", seq, load.Truncate(data, 100))
		}
		f.last = seq
		f.lags = append(f.lags, float64(got.Sub(at).Microseconds())/1000)
	}
	if ns, err := f.cursorSeq([]byte(next)); err != nil || ns != f.last {
		return "", fmt.Errorf("nextCursor %q stands for seq %d (%v), the page ends at %d", next, ns, err, f.last)
	}
	return next, nil
}

// feedTypes are the change types of the feed (decisions §20).
var feedTypes = []string{"registration.created", "registration.updated", "order.created", "order.updated", "checkin.created", "checkin.conflict"}

func feedType(b []byte) bool {
	for _, t := range feedTypes {
		if string(b) == t {
			return true
		}
	}
	return false
}

// cursorSeq is the seq a cursor of the follower's event stands for (the
// bench knows the service's cursor format: base64url of
// "f1:<eventId>:<seq>"); an error for another event's.
//
// A cursor of the event starts with curPre (the prefix's whole 3-byte
// groups, encoded once): that part is compared, and only the rest (the
// prefix's last bytes and the seq, a dozen characters) decoded.
func (f *feedFollower) cursorSeq(c []byte) (uint64, error) {
	if f.curPre == nil {
		pre := "f1:" + f.eid + ":"
		whole := len(pre) / 3 * 3
		f.curPre = base64.RawURLEncoding.AppendEncode(nil, []byte(pre[:whole]))
		f.curTail = pre[whole:]
	}
	var buf [128]byte
	if !bytes.HasPrefix(c, f.curPre) || base64.RawURLEncoding.DecodedLen(len(c)-len(f.curPre)) > len(buf) {
		return 0, f.notCursor(c)
	}
	n, err := base64.RawURLEncoding.Decode(buf[:], c[len(f.curPre):])
	if err != nil {
		return 0, err
	}
	raw := buf[:n]
	tail := f.curTail
	if len(raw) <= len(tail) || string(raw[:len(tail)]) != tail {
		return 0, f.notCursor(c)
	}
	return strconv.ParseUint(string(raw[len(tail):]), 10, 64)
}

// notCursor is the error of a cursor that is not one of the follower's
// event, saying what it decodes to.
func (f *feedFollower) notCursor(c []byte) error {
	raw, err := base64.RawURLEncoding.DecodeString(string(c))
	if err != nil {
		return fmt.Errorf("not a cursor of %s: %q (%v)", f.eid, c, err)
	}
	return fmt.Errorf("not a cursor of %s: %q", f.eid, raw)
}

// parseFeedTime reads an occurredAt: the service's "2006-01-02T15:04:05.000Z"
// by hand (time.Parse of every change was a good part of a follower's
// work), any other RFC 3339 time with time.Parse.
func parseFeedTime(b []byte) (time.Time, error) {
	if len(b) == 24 && b[4] == '-' && b[7] == '-' && b[10] == 'T' && b[13] == ':' && b[16] == ':' && b[19] == '.' && b[23] == 'Z' {
		num := func(i, n int) int {
			v := 0
			for _, c := range b[i : i+n] {
				if c < '0' || c > '9' {
					return -1
				}
				v = v*10 + int(c-'0')
			}
			return v
		}
		y, mo, d, h, mi, s, ms := num(0, 4), num(5, 2), num(8, 2), num(11, 2), num(14, 2), num(17, 2), num(20, 3)
		if y >= 0 && mo >= 1 && mo <= 12 && d >= 1 && d <= 31 && h >= 0 && h < 24 && mi >= 0 && mi < 60 && s >= 0 && s < 60 && ms >= 0 {
			return time.Date(y, time.Month(mo), d, h, mi, s, ms*int(time.Millisecond), time.UTC), nil
		}
	}
	return time.Parse(time.RFC3339Nano, string(b))
}

// reached reports whether the follower has read through seq end, or
// stopped on an error.
func (f *feedFollower) reached(end uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last >= end || f.reqErr != nil || f.bad != ""
}

// cursorSeq is the seq a feed cursor stands for (the bench knows the
// service's cursor format: base64url of "f1:<eventId>:<seq>").
func cursorSeq(c string) (uint64, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, err
	}
	i := strings.LastIndexByte(string(b), ':')
	if i < 0 {
		return 0, fmt.Errorf("bench: feed cursor %q", b)
	}
	return strconv.ParseUint(string(b[i+1:]), 10, 64)
}

// feedPosition reads the event's feed position (the registrations list's
// Feed-Cursor) and the seq it stands for (from an empty read after it).
func feedPosition(c *load.Client, key, eid string) (string, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	load.SetRequest(req, "GET", c.Base+"/v1/events/"+eid+"/registrations?limit=1", key)
	if err := c.HC.DoTimeout(req, resp, 10*time.Second); err != nil || resp.StatusCode() != 200 {
		return "", fmt.Errorf("bench: list registrations: status %d %v", resp.StatusCode(), err)
	}
	fc := string(resp.Header.Peek("Feed-Cursor"))
	if fc == "" {
		return "", fmt.Errorf("bench: the registrations list answered no Feed-Cursor")
	}
	return fc, nil
}

// feedWire is a feed page as JSON (feedEnd decodes every object with it,
// which the followers' check does not).
type feedWire struct {
	Data []struct {
		Seq        uint64          `json:"seq"`
		OccurredAt string          `json:"occurredAt"`
		Object     json.RawMessage `json:"object"`
	} `json:"data"`
	NextCursor string `json:"nextCursor"`
	HasMore    bool   `json:"hasMore"`
}

// feedEnd reads the feed from cursor (at seq from) to its end with a JSON
// decoder, between drops (the followers' check reads envelopes only):
// every page valid JSON, every change the seq after the one before. It
// answers the last change's seq (from when there is none after cursor).
func feedEnd(c *load.Client, key, eid, cursor string, from uint64) (uint64, error) {
	last := from
	for {
		var p feedWire
		if err := c.JSON("GET", "/v1/events/"+eid+"/changes?limit=1000&after="+url.QueryEscape(cursor), key, nil, 200, &p); err != nil {
			return 0, err
		}
		for _, ch := range p.Data {
			if ch.Seq != last+1 || len(ch.Object) == 0 || ch.Object[0] != '{' {
				return 0, fmt.Errorf("bench: the feed read to its end: seq %d after %d (object %s)", ch.Seq, last, load.Truncate(ch.Object, 60))
			}
			last = ch.Seq
		}
		cursor = p.NextCursor
		if !p.HasMore {
			return last, nil
		}
	}
}

// feedFollowRounds is how many pairs of drops (alone, beside the
// followers) feed-follow runs, in full size and in quick mode: the ratio
// is the median of the pairs' ratios, so one drop that ran fast or slow
// (a compaction, the machine's other work) does not decide it.
const (
	feedFollowRounds      = 5
	feedFollowRoundsQuick = 3
)

// feedFollow measures the flash sale without and with Followers following
// the event's change feed, in rounds of one drop of each (the order turned
// around every other round), and checks that every follower saw every
// change of the drop exactly once, in order, with its lag.
func (h *Harness) feedFollow(s *load.Server, c *load.Client) error {
	e, err := c.CreateEvent(s.SecretKey, "Feed follow", 10_000_000)
	if err != nil {
		return err
	}
	rounds := feedFollowRounds
	if h.cfg.Quick {
		rounds = feedFollowRoundsQuick
	}
	rep := &FeedFollowReport{Followers: Followers, Rounds: rounds, ExactlyOnce: true}
	var ack load.Acks
	var rps, srv, gen [2][]float64 // alone, with: per drop
	var lags []float64
	var bytesRead int64
	for r := range rounds {
		var pair [2]float64
		for k := range 2 {
			with := k == 1
			if r%2 == 1 {
				with = !with
			}
			if err := settle(c); err != nil {
				return err
			}
			start, err := feedPosition(c, s.SecretKey, e.EventID)
			if err != nil {
				return err
			}
			pos, err := cursorSeq(start)
			if err != nil {
				return err
			}
			var fs []*feedFollower
			var end atomic.Uint64
			stop := make(chan struct{})
			if with {
				for range Followers {
					fc, err := s.Client(1)
					if err != nil {
						return err
					}
					f := &feedFollower{c: fc, eid: e.EventID, key: s.SecretKey, cursor: start, last: pos}
					fs = append(fs, f)
					go f.follow(stop, &end)
				}
			}
			name := "feed-follow-alone"
			if with {
				name = fmt.Sprintf("feed-follow-%d", Followers)
			}
			res := h.record(h.drop(name, c, s, e, 0, &ack, fmt.Sprintf("ff%d-%d-", r, k)).Run())
			// Every answered order is in the feed: its end is the
			// position the registrations list reflects now, and the
			// feed read to its end ends there.
			endCursor, err := feedPosition(c, s.SecretKey, e.EventID)
			var last, read uint64
			if err == nil {
				last, err = cursorSeq(endCursor)
			}
			if err == nil {
				read, err = feedEnd(c, s.SecretKey, e.EventID, start, pos)
			}
			if err == nil && read != last {
				err = fmt.Errorf("bench: the feed read to its end ends at %d, the list's Feed-Cursor at %d", read, last)
			}
			if err != nil {
				close(stop)
				return err
			}
			end.Store(last)
			close(stop)
			// A follower that reached the end waits in a long poll for a
			// change that does not come; it stops once that ends.
			deadline := time.Now().Add(followWait * time.Second)
			for _, f := range fs {
				for !f.reached(last) && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
			}
			for i, f := range fs {
				f.mu.Lock()
				rep.Reads += f.reads
				rep.Changes += int64(f.last - pos)
				bytesRead += f.bytes
				lags = append(lags, f.lags...)
				switch {
				case f.reqErr != nil:
					rep.ExactlyOnce, rep.Problem = false, fmt.Sprintf("follower %d: %v", i, f.reqErr)
				case f.bad != "":
					rep.ExactlyOnce, rep.Problem = false, fmt.Sprintf("follower %d: %s", i, f.bad)
				case f.last < last:
					rep.ExactlyOnce, rep.Problem = false, fmt.Sprintf("follower %d ended at %d, the feed at %d", i, f.last, last)
				case len(f.lags) != int(f.last-pos):
					rep.ExactlyOnce, rep.Problem = false, fmt.Sprintf("follower %d read %d changes for seqs %d to %d", i, len(f.lags), pos+1, f.last)
				}
				f.mu.Unlock()
			}
			w := 0
			if with {
				w = 1
			}
			pair[w] = res.RPS
			rps[w] = append(rps[w], res.RPS)
			srv[w] = append(srv[w], res.ServerCPUUsPerRequest)
			gen[w] = append(gen[w], res.ClientCPUUsPerRequest)
		}
		if pair[0] > 0 {
			rep.RoundRatios = append(rep.RoundRatios, pair[1]/pair[0])
		}
	}
	rep.Ratio = median(rep.RoundRatios)
	rep.AloneRPS, rep.FollowRPS = median(rps[0]), median(rps[1])
	rep.ServerUsAlone, rep.ServerUsFollow = median(srv[0]), median(srv[1])
	rep.GeneratorUsAlone, rep.GeneratorUsFollow = median(gen[0]), median(gen[1])
	if rep.Changes > 0 {
		rep.BytesPerChange = float64(bytesRead) / float64(rep.Changes)
	}
	if len(lags) > 0 {
		slices.Sort(lags)
		q := func(p float64) float64 { return lags[min(len(lags)-1, int(p*float64(len(lags))))] }
		rep.LagP50Ms, rep.LagP99Ms, rep.LagMaxMs = q(0.50), q(0.99), lags[len(lags)-1]
	}
	h.rep.FeedFollow = rep
	h.logf("   %d followers: %.3f x the drop alone (median of %d rounds' ratios %s; median drops %.0f vs %.0f orders/s); service CPU %.1f vs %.1f us an order, generator %.1f vs %.1f; %.0f bytes a change delivered; lag p50 %.1f p99 %.1f max %.1f ms; %d changes read in %d requests; exactly once in order: %v %s",
		Followers, rep.Ratio, rounds, fmtRatios(rep.RoundRatios), rep.FollowRPS, rep.AloneRPS, rep.ServerUsFollow, rep.ServerUsAlone, rep.GeneratorUsFollow, rep.GeneratorUsAlone,
		rep.BytesPerChange, rep.LagP50Ms, rep.LagP99Ms, rep.LagMaxMs, rep.Changes, rep.Reads, rep.ExactlyOnce, rep.Problem)
	h.rep.check("feed-follow", "every follower saw every change once, in order", rep.ExactlyOnce, "%s", rep.Problem)
	return h.verifyOrders("feed-follow", c, s, e, &ack)
}

// median is the middle of xs (the mean of the middle two for an even
// count; 0 for none). xs is not changed.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// fmtRatios writes ratios as "0.912, 0.874, ..." in round order.
func fmtRatios(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 3, 64)
	}
	return strings.Join(parts, ", ")
}
