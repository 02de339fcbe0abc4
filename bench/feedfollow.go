package bench

import (
	"bytes"
	"encoding/base64"
	"fmt"
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
	Followers int     `json:"followers"`
	Rounds    int     `json:"rounds"`
	AloneRPS  float64 `json:"aloneRps"`
	FollowRPS float64 `json:"followRps"`
	Ratio     float64 `json:"ratio"`
	Changes   int64   `json:"changes"` // changes each follower read, summed over rounds
	Reads     int64   `json:"reads"`   // feed requests of all followers
	LagP50Ms  float64 `json:"lagP50Ms"`
	LagP99Ms  float64 `json:"lagP99Ms"`
	LagMaxMs  float64 `json:"lagMaxMs"`
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
	reqErr error
	bad    string // the first rule broken
}

type feedWire struct {
	Data []struct {
		Seq        uint64 `json:"seq"`
		OccurredAt string `json:"occurredAt"`
	} `json:"data"`
	NextCursor string `json:"nextCursor"`
	HasMore    bool   `json:"hasMore"`
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
		err := f.c.HC.DoTimeout(req, resp, (followWait+15)*time.Second)
		got := time.Now()
		f.mu.Lock()
		f.reads++
		if err != nil || resp.StatusCode() != 200 {
			f.reqErr = fmt.Errorf("feed read: status %d %v %s", resp.StatusCode(), err, load.Truncate(resp.Body(), 200))
			f.mu.Unlock()
			return
		}
		next, err := scanFeed(resp.Body(), func(seq uint64, at time.Time) {
			if seq != f.last+1 && f.bad == "" {
				f.bad = fmt.Sprintf("seq %d after %d", seq, f.last)
			}
			f.last = seq
			f.lags = append(f.lags, float64(got.Sub(at).Microseconds())/1000)
		})
		if err != nil {
			f.reqErr = fmt.Errorf("feed read: %w", err)
			f.mu.Unlock()
			return
		}
		f.cursor = next
		f.mu.Unlock()
	}
}

// scanFeed reads a feed page's seqs, occurredAts and nextCursor without
// decoding the objects: a follower in the same process as the load must
// not spend the cores the service is measured on parsing records it does
// not look at. It relies on the page's member order (cursor, seq, type,
// occurredAt, object per change; nextCursor after data), which the
// service writes (api.FeedPage.AppendJSON); a string inside an object
// cannot hold the markers unescaped.
func scanFeed(b []byte, fn func(seq uint64, at time.Time)) (next string, err error) {
	const change, seqKey, atKey, nextKey = `{"cursor":"`, `,"seq":`, `,"occurredAt":"`, `],"nextCursor":"`
	end := bytes.LastIndex(b, []byte(nextKey))
	if end < 0 {
		return "", fmt.Errorf("no nextCursor in %s", load.Truncate(b, 200))
	}
	nc := b[end+len(nextKey):]
	q := bytes.IndexByte(nc, '"')
	if q < 0 {
		return "", fmt.Errorf("bad nextCursor")
	}
	next = string(nc[:q])
	body := b[:end]
	for {
		i := bytes.Index(body, []byte(change))
		if i < 0 {
			return next, nil
		}
		body = body[i+len(change):]
		j := bytes.Index(body, []byte(seqKey))
		if j < 0 {
			return "", fmt.Errorf("a change without seq")
		}
		body = body[j+len(seqKey):]
		k := 0
		for k < len(body) && body[k] >= '0' && body[k] <= '9' {
			k++
		}
		seq, err := strconv.ParseUint(string(body[:k]), 10, 64)
		if err != nil {
			return "", fmt.Errorf("seq: %w", err)
		}
		j = bytes.Index(body, []byte(atKey))
		if j < 0 {
			return "", fmt.Errorf("a change without occurredAt")
		}
		body = body[j+len(atKey):]
		k = bytes.IndexByte(body, '"')
		if k < 0 {
			return "", fmt.Errorf("bad occurredAt")
		}
		at, err := time.Parse(time.RFC3339Nano, string(body[:k]))
		if err != nil {
			return "", err
		}
		fn(seq, at)
	}
}

// reached reports whether the follower has read through seq end, or
// stopped on an error.
func (f *feedFollower) reached(end uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last >= end || f.reqErr != nil
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

// feedEnd is the seq of the feed's last change: the last change's seq of
// a read from cursor to the end (0 when there is none after cursor).
func feedEnd(c *load.Client, key, eid, cursor string, from uint64) (uint64, error) {
	last := from
	for {
		var p feedWire
		if err := c.JSON("GET", "/v1/events/"+eid+"/changes?limit=1000&after="+url.QueryEscape(cursor), key, nil, 200, &p); err != nil {
			return 0, err
		}
		if n := len(p.Data); n > 0 {
			last = p.Data[n-1].Seq
		}
		cursor = p.NextCursor
		if !p.HasMore {
			return last, nil
		}
	}
}

// feedFollow measures the flash sale without and with Followers following
// the event's change feed, interleaved over rounds (the order turned
// around every other round), and checks that every follower saw every
// change of the drop exactly once, in order, with its lag.
func (h *Harness) feedFollow(s *load.Server, c *load.Client) error {
	e, err := c.CreateEvent(s.SecretKey, "Feed follow", 10_000_000)
	if err != nil {
		return err
	}
	rounds := 2
	if h.cfg.Quick {
		rounds = 3
	}
	rep := &FeedFollowReport{Followers: Followers, Rounds: rounds, ExactlyOnce: true}
	var ack load.Acks
	var sum [2]float64
	var lags []float64
	for r := range rounds {
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
			last, err := feedEnd(c, s.SecretKey, e.EventID, start, pos)
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
			if with {
				sum[1] += res.RPS
			} else {
				sum[0] += res.RPS
			}
		}
	}
	n := float64(rounds)
	rep.AloneRPS, rep.FollowRPS = sum[0]/n, sum[1]/n
	if rep.AloneRPS > 0 {
		rep.Ratio = rep.FollowRPS / rep.AloneRPS
	}
	if len(lags) > 0 {
		slices.Sort(lags)
		q := func(p float64) float64 { return lags[min(len(lags)-1, int(p*float64(len(lags))))] }
		rep.LagP50Ms, rep.LagP99Ms, rep.LagMaxMs = q(0.50), q(0.99), lags[len(lags)-1]
	}
	h.rep.FeedFollow = rep
	h.logf("   %d followers: %.3f x the drop alone (%.0f vs %.0f orders/s); lag p50 %.1f p99 %.1f max %.1f ms; %d changes read in %d requests; exactly once in order: %v %s",
		Followers, rep.Ratio, rep.FollowRPS, rep.AloneRPS, rep.LagP50Ms, rep.LagP99Ms, rep.LagMaxMs, rep.Changes, rep.Reads, rep.ExactlyOnce, rep.Problem)
	h.rep.check("feed-follow", "every follower saw every change once, in order", rep.ExactlyOnce, "%s", rep.Problem)
	return h.verifyOrders("feed-follow", c, s, e, &ack)
}
