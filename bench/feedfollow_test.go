package bench

import (
	"ticketd/bench/load"
	"ticketd/http/api"

	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFeedFollow runs the feed-follow scenario tiny against the service
// composed in the test binary: 20 followers long-poll the drop's event
// feed, every one must see every change once, in order, and the drops
// must keep every acknowledged order.
func TestFeedFollow(t *testing.T) {
	if testing.Short() {
		t.Skip("starts service processes")
	}
	self, err := os.Executable()
	require.NoError(t, err)
	cfg := QuickConfig()
	cfg.TicketdBin, cfg.SelfBin, cfg.TicketdRole = self, self, load.RoleService
	cfg.WorkDir = t.TempDir()
	cfg.Conns, cfg.Duration = 8, time.Second
	cfg.Only = map[string]bool{"feed-follow": true}
	var log strings.Builder
	cfg.Log = &log
	rep, err := Run(cfg)
	require.NoError(t, err)
	t.Log(log.String())
	names := map[string]bool{}
	for _, c := range rep.Checks {
		require.True(t, c.OK, "%s: %s: %s", c.Scenario, c.Name, c.Detail)
		names[c.Scenario+"/"+c.Name] = true
	}
	for _, want := range []string{"feed-follow/every follower saw every change once, in order", "feed-follow/every 2xx hold present"} {
		require.True(t, names[want], "check %q did not run", want)
	}
	x := rep.FeedFollow
	require.NotNil(t, x)
	require.True(t, x.ExactlyOnce, x.Problem)
	require.Greater(t, x.Changes, int64(0))
	require.Greater(t, x.AloneRPS, 0.0)
	require.Greater(t, x.LagP99Ms, 0.0)
	require.Contains(t, rep.Markdown(""), "## Feed followers")
}

// TestFollowerCatchesFeedFaults: the followers' check (feedFollower.take,
// which reads each change's envelope and not its object) passes pages of
// a feed as the service writes them (api.FeedPage), each change once and
// in order, an empty page included; and refuses a gap, a change seen
// twice, two changes swapped, a cursor that is not its change's (or is
// another event's), an unknown type, a page cut short, bytes after the
// page and a nextCursor that does not stand where the page ends.
func TestFollowerCatchesFeedFaults(t *testing.T) {
	const eid = "evt_01m80je06d7aca5stxyc0g1dea"
	at := time.Date(2026, 11, 29, 9, 30, 1, 234_000_000, time.UTC)
	cur := func(ev string, seq uint64) string {
		return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "f1:%s:%d", ev, seq))
	}
	obj := func(seq uint64) api.FeedObject {
		return api.FeedObject(fmt.Sprintf(`{"id":"ord_%d","status":"open","items":[{"quantity":1},{"quantity":2}],"name":"}},{\"cursor\":\"x%d"}`, seq, seq))
	}
	change := func(seq uint64) api.FeedChange {
		return api.FeedChange{Cursor: cur(eid, seq), Seq: seq, Type: "order.created", OccurredAt: api.FeedTime(at.Add(time.Duration(seq) * time.Millisecond)), Object: obj(seq)}
	}
	page := func(next uint64, seqs ...uint64) []byte {
		p := api.FeedPage{Data: []api.FeedChange{}, NextCursor: cur(eid, next)}
		for _, s := range seqs {
			p.Data = append(p.Data, change(s))
		}
		return p.AppendJSON(nil)
	}
	follow := func(pages ...[]byte) (*feedFollower, error) {
		f := &feedFollower{eid: eid, last: 0}
		for _, b := range pages {
			if _, err := f.take(b, at.Add(time.Second)); err != nil {
				return f, err
			}
		}
		return f, nil
	}

	f, err := follow(page(3, 1, 2, 3), page(3), page(5, 4, 5), page(6, 6))
	require.NoError(t, err)
	require.Equal(t, uint64(6), f.last)
	require.Len(t, f.lags, 6, "a lag for every change")
	require.InDelta(t, 999.0, f.lags[0], 0.001, "occurredAt read to the millisecond")

	edit := func(b []byte, old, new string) []byte {
		require.Contains(t, string(b), old)
		return []byte(strings.Replace(string(b), old, new, 1))
	}
	bad := map[string][][]byte{
		"seq 4 after 2":                          {page(2, 1, 2), page(4, 4)},    // a gap
		"seq 2 after 2":                          {page(2, 1, 2), page(3, 2, 3)}, // seen twice
		"seq 3 after 1":                          {page(3, 1, 3, 2)},             // swapped
		"seq 2 has the cursor":                   {edit(page(3, 1, 2, 3), cur(eid, 2), cur(eid, 3))},
		"not a cursor of":                        {edit(page(1, 1), `"`+cur(eid, 1)+`","seq"`, `"`+cur("evt_other", 1)+`","seq"`)},
		"seq 1: type \"order.deleted\"":          {edit(page(2, 1, 2), `"type":"order.created"`, `"type":"order.deleted"`)},
		"cut short":                              {edit(page(2, 1, 2), `}}],"next`, `],"next`)},
		"page ends with":                         {append(page(2, 1, 2), ' ')},
		"stands for seq 1":                       {page(1, 1, 2)},
		"does not start with":                    {page(2, 1, 2)[1:]},
		"no object":                              {edit(page(1, 1), `"object":{`, `"object":[{`)},
		"a change's start inside seq 1's object": {edit(page(2, 1, 2), `},{"cursor":"`+cur(eid, 2), `} ,{"cursor":"`+cur(eid, 2))},
		"stands for seq 2 (<nil>), the page ends at 1": {edit(page(2, 1, 2), `},{"cursor":"`+cur(eid, 2), `},{"seq":"`+cur(eid, 2))},
	}
	for want, pages := range bad {
		_, err := follow(pages...)
		require.Errorf(t, err, "%s: refused", want)
		require.Containsf(t, err.Error(), want, "%s", want)
	}
}
