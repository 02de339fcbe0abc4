package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app"
	"ticketd/event"
	"ticketd/snapshots"
)

// TestCheckoutSessionsPurgedAfterExpiry: the real service, sessions made
// through the Developer and storefront APIs; once expired they answer as
// expired (hosted page 410, an order from the page placed nothing); after
// the keep period the timer purges them from the event's state (the
// snapshot's session count falls to the one session that placed an order)
// and they answer as expired still; a restart replays to the same state and
// purges what was pending before it.
func TestCheckoutSessionsPurgedAfterExpiry(t *testing.T) {
	const ttl, keep = 1500 * time.Millisecond, 3 * time.Second
	f := newAPIFx(t, func(c *app.Config) { c.CheckoutSessionTTL, c.CheckoutSessionKeep = ttl, keep })
	u := f.unit(t)
	ev := apiPublished(t, u.dev)
	tt := apiOpenType(t, u.dev, ev, map[string]any{"capacity": 100})
	s := f.s

	// checkouts is the number of checkout sessions in a snapshot taken now.
	checkouts := func() int {
		t.Helper()
		seq, err := s.Sys.Store().LastSeq(ev)
		require.NoError(t, err)
		require.True(t, s.Sys.WantSnapshot(ev, seq))
		snaps := snapshots.New(s.Sys.Store(), 2)
		deadline := time.Now().Add(20 * time.Second)
		for {
			at, b, ok, err := snaps.LoadNewest(ev)
			require.NoError(t, err)
			if ok && at >= seq {
				st, err := event.UnmarshalState(b)
				require.NoError(t, err)
				return len(st.Checkouts)
			}
			require.True(t, time.Now().Before(deadline), "no snapshot at %d", seq)
			time.Sleep(20 * time.Millisecond)
		}
	}
	create := func(n int) []string {
		var urls []string
		for i := range n {
			c := u.dev
			path := "/v1/events/" + ev + "/checkout-sessions"
			if i%2 == 1 {
				c, path = u.sf, "/storefront/v1/events/"+ev+"/checkout-sessions"
			}
			cs := apiWant(t, c.Do("POST", path, map[string]any{"items": apiTicket(tt), "locale": "zh-CN"}), 201)
			urls = append(urls, apiS(cs, "url"))
		}
		return urls
	}
	page := func(method, url string) (int, string) {
		t.Helper()
		var body []byte
		h := map[string]string{}
		if method == "POST" {
			body = []byte("form=checkout&email=late%40example.com")
			h["Content-Type"] = "application/x-www-form-urlencoded"
		}
		resp, b := apiRaw(t, method, url, h, body)
		return resp.StatusCode, string(b)
	}
	// expired requires the expired page, in the session's language while
	// its record is kept, in the visitor's once purged.
	expired := func(url, title, why string) {
		t.Helper()
		st, body := page("GET", url)
		require.Equal(t, 410, st, why)
		require.Contains(t, body, title, why)
		st, _ = page("POST", url)
		require.Equal(t, 410, st, why)
	}

	urls := create(20)
	// One session places an order from its page: it is never purged.
	st, _ := page("POST", urls[0])
	require.Equal(t, 303, st)
	require.Equal(t, 20, checkouts())

	time.Sleep(ttl + 100*time.Millisecond)
	expired(urls[1], "此结账链接已过期", "expired, not yet purged")
	require.Equal(t, 20, checkouts(), "kept while the keep period runs")

	// Purged by the timer, with no request to the event.
	deadline := time.Now().Add(20 * time.Second)
	for checkouts() != 1 {
		require.True(t, time.Now().Before(deadline), "sessions not purged")
		time.Sleep(100 * time.Millisecond)
	}
	for _, url := range urls[1:4] {
		expired(url, "This checkout link has expired", "purged")
	}
	orders := apiWant(t, u.dev.Do("GET", "/v1/events/"+ev+"/orders", nil), 200)
	require.Len(t, apiData(t, orders), 1, "an order from a purged session placed nothing")
	st, body := page("GET", s.URL+"/checkout/"+strings.TrimPrefix(ev, "evt_")+".nope")
	require.Equal(t, 404, st, "a malformed id stays unknown")
	require.Contains(t, body, "Page not found")

	// Sessions pending purge at a restart are purged after it: the
	// replayed state rebuilds the purge queue.
	pending := create(6)
	require.Equal(t, 7, checkouts())
	s.Restart()
	require.Equal(t, 7, checkouts(), "the restart keeps them")
	// An event's timer runs while it is loaded, as for lapsed holds: the
	// first request loads it, and its recovery's Expire purges what is due.
	apiWant(t, newAPIClient(t, s.URL).WithKey(u.Secret).Do("GET", "/v1/events/"+ev, nil), 200)
	deadline = time.Now().Add(20 * time.Second)
	for checkouts() != 1 {
		require.True(t, time.Now().Before(deadline), "sessions pending at the restart not purged")
		time.Sleep(100 * time.Millisecond)
	}
	// The restart moved the service to a new port.
	rebase := func(u string) string { return s.URL + u[strings.Index(u, "/checkout/"):] }
	for _, url := range pending[:2] {
		expired(rebase(url), "This checkout link has expired", "purged after the restart")
	}
	// The session that placed an order still leads to its order.
	st, _ = page("GET", rebase(urls[0]))
	require.Equal(t, 303, st)
}
