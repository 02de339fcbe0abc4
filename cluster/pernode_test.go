package cluster_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	nethttp "net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app"
	"ticketd/app/apptest"
	"ticketd/http/console"
	"ticketd/webhooks"
)

const (
	pnStripeSecret = "whsec_pernode_test_secret"
	// pnIdle is the console's idle timeout in these tests: its uses are
	// shared every second.
	pnIdle = 5 * time.Second
)

var pnCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// consoleSignIn signs the operator in through nd's sign-in form in b and
// answers the session's CSRF token, read from the console's home page.
func consoleSignIn(t *testing.T, b *apptest.Browser, nd *node) string {
	t.Helper()
	p := b.Get(nd.URL + "/console/login")
	require.Equal(t, 200, p.Status)
	m := pnCSRF.FindStringSubmatch(p.Body)
	require.NotNil(t, m, "no csrf on the sign-in page")
	p = b.Post(nd.URL+"/console/login", url.Values{"csrf": {html.UnescapeString(m[1])}, "token": {nd.Admin}})
	require.Equal(t, 303, p.Status, p.Body)
	p = b.Get(nd.URL + "/console")
	require.Equal(t, 200, p.Status, "signed in on %s", nd.name)
	m = pnCSRF.FindStringSubmatch(p.Body)
	require.NotNil(t, m, "no csrf on the console")
	return html.UnescapeString(m[1])
}

// signedIn reports whether b's session cookie opens the console on nd
// (the cookie jar sends 127.0.0.1's cookies to every port).
func signedIn(b *apptest.Browser, nd *node) bool {
	return b.Get(nd.URL+"/console").Status == 200
}

// TestSharedPerNodeState: what used to live on the node that made it is
// the cluster's. A console session started through one node is live on
// the others; a sign-out through another ends it at once there and
// within a second everywhere, and a sign-out everywhere ends every
// session of the person on every node. An email-gate cookie set by one
// node opens the pass page on another (one secret per cluster). A
// webhook delivered by an event's owner is listed, and sent again, through
// the other nodes.
func TestSharedPerNodeState(t *testing.T) {
	t.Parallel() // see parallelTests
	// Stripe mode for its webhooks; its API is never reached here (the
	// events sent are of no order of ours).
	nodes := startNodes(t, 3, func(c *app.Config) {
		c.PaymentProvider = app.PaymentStripe
		c.Stripe.SecretKey, c.Stripe.WebhookSecret, c.Stripe.APIBase = "sk_test_pernode", pnStripeSecret, "http://127.0.0.1:9"
		c.Tune = &app.Tuning{Console: func(cc *console.Config) { cc.SessionIdle = pnIdle }}
	})
	a, b, c := nodes[0], nodes[1], nodes[2]

	t.Run("stripe events acted on", func(t *testing.T) {
		body := []byte(`{"id":"evt_pernode_1","object":"event","api_version":"2025-01-27.acacia","created":1795600000,
"livemode":false,"type":"checkout.session.completed","data":{"object":{"id":"cs_test_x","object":"checkout.session",
"payment_status":"paid","amount_total":1000,"currency":"eur","client_reference_id":"NOTOURS-0001"}}}`)
		deliver := func(nd *node) map[string]any {
			req, err := nethttp.NewRequest("POST", nd.URL+"/webhooks/payments/stripe", bytes.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Stripe-Signature", webhooks.Signature(time.Now().Unix(), body, pnStripeSecret))
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			var m map[string]any
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
			require.Equal(t, 200, resp.StatusCode, "%v", m)
			return m
		}
		first := deliver(a)
		require.Nil(t, first["duplicate"], "%v", first)
		require.Equal(t, "ignored", first["outcome"], "%v", first)
		// Redelivered at once to the other nodes: already handled.
		for _, nd := range []*node{b, c, a} {
			require.Equal(t, true, deliver(nd)["duplicate"], "the redelivery to %s", nd.name)
		}
		// Every node keeps a copy (swept by the same rule as on one node).
		for _, nd := range nodes {
			eventually(t, 5*time.Second, "the event id copied to "+nd.name, func() bool {
				_, ok, err := nd.Main.System().Store().Get([]byte("provider-event/stripe/evt_pernode_1"))
				return err == nil && ok
			})
		}
	})

	t.Run("console sessions", func(t *testing.T) {
		br := apptest.NewBrowser(t)
		csrf := consoleSignIn(t, br, a)
		for _, nd := range nodes {
			require.True(t, signedIn(br, nd), "signed in through %s, at once on %s", a.name, nd.name)
		}
		// Signed out through B: at once on B, within a second elsewhere.
		p := br.Post(b.URL+"/console/logout", url.Values{"csrf": {csrf}})
		require.Equal(t, 303, p.Status, p.Body)
		require.Contains(t, p.Header.Get("Set-Cookie"), "ticketd_console=;")
		for _, nd := range nodes {
			require.False(t, signedIn(br, nd), "signed out on %s", nd.name)
		}

		// Two browsers of the operator, started through A and C; a third
		// kept cookie is replayed on every node after the sign-out.
		one, two := apptest.NewBrowser(t), apptest.NewBrowser(t)
		csrfOne := consoleSignIn(t, one, a)
		consoleSignIn(t, two, c)
		eventually(t, 2*time.Second, "both sessions live on B", func() bool { return signedIn(one, b) && signedIn(two, b) })
		p = one.Post(b.URL+"/console/logout-everywhere", url.Values{"csrf": {csrfOne}})
		require.Equal(t, 303, p.Status, p.Body)
		require.False(t, signedIn(two, b), "signed out everywhere through B: at once on B")
		eventually(t, time.Second, "the other browser signed out on every node", func() bool {
			for _, nd := range nodes {
				if signedIn(two, nd) {
					return false
				}
			}
			return true
		})
		// A new sign-in after it works everywhere.
		three := apptest.NewBrowser(t)
		consoleSignIn(t, three, c)
		for _, nd := range nodes {
			require.True(t, signedIn(three, nd), "a session begun after the sign-out everywhere, on %s", nd.name)
		}
	})

	t.Run("console session idle timeout", func(t *testing.T) {
		br := apptest.NewBrowser(t)
		consoleSignIn(t, br, a)
		// Used through A for longer than the idle timeout: live on B,
		// which learnt of the use from A's shared touches.
		for end := time.Now().Add(pnIdle + 2*time.Second); time.Now().Before(end); time.Sleep(700 * time.Millisecond) {
			require.True(t, signedIn(br, a), "in use on %s", a.name)
		}
		require.True(t, signedIn(br, b), "used through %s moments ago, live on %s", a.name, b.name)
		// Then idle: ended on every node.
		time.Sleep(pnIdle + 1500*time.Millisecond)
		for _, nd := range []*node{c, a, b} {
			require.False(t, signedIn(br, nd), "idle past the timeout, ended on %s", nd.name)
		}
	})

	u := a.NewUnit("PerNode")
	// An event created through B, with a webhook endpoint made through A.
	sink := &hookSink{}
	rcv := httptest.NewServer(sink)
	t.Cleanup(rcv.Close)
	base := "/admin/v1/business-units/" + u.ID + "/webhook-endpoints"
	st, ep := retry503(t, func() (int, map[string]any) {
		return do(t, "POST", a.URL+base, a.Admin, map[string]any{"url": rcv.URL, "eventTypes": webhooks.HookTypes()})
	})
	require.Equal(t, 201, st, "%v", ep)
	epID, secret := ep["id"].(string), ep["secret"].(string)
	st, ev := retry503(t, func() (int, map[string]any) {
		return do(t, "POST", b.URL+"/v1/events", u.Secret, map[string]any{"name": "Drop", "timezone": "UTC", "startsAt": "2030-06-01T09:00:00Z"})
	})
	require.Equal(t, 201, st, "%v", ev)
	evt := ev["id"].(string)
	owner := ownerOf(t, b, evt)
	typeID := openFreeType(t, b.URL, u.Secret, evt)
	st, reg, _ := doIdemRetry(t, b.URL+"/v1/events/"+evt+"/registrations", u.Secret, "pernode-reg-"+evt,
		map[string]any{"email": "Ada@Example.com", "name": "Ada", "registrationTypeId": typeID})
	require.Equal(t, 201, st, "%v", reg)
	t.Logf("event %s owned by %s", evt, owner)

	t.Run("email gate cookie", func(t *testing.T) {
		passURL := reg["passUrl"].(string)
		path := passURL[strings.Index(passURL, "/pass/"):]
		code := reg["checkinCode"].(string)
		phone := apptest.NewBrowser(t)
		p := phone.Post(a.URL+path, url.Values{"form": {"gate"}, "email": {"ada@example.com"}})
		require.Equal(t, 303, p.Status, p.Body)
		require.Contains(t, p.Header.Get("Set-Cookie"), "ticketd_gate=v1.")
		for _, nd := range nodes {
			p = phone.Get(nd.URL + path)
			require.Equal(t, 200, p.Status)
			require.Contains(t, p.Body, `id="checkin-code">`+code+`<`, "the gate cookie set by %s opens the pass on %s", a.name, nd.name)
		}
		// A device without the cookie still meets the gate.
		p = apptest.NewBrowser(t).Get(c.URL + path)
		require.NotContains(t, p.Body, `id="checkin-code">`)
	})

	t.Run("webhook delivery log", func(t *testing.T) {
		eventually(t, 20*time.Second, "the registration's webhook delivered", func() bool { return sink.signedFor(t, evt, secret) >= 1 })
		deliveries := func(nd *node) []any {
			st, l := do(t, "GET", nd.URL+base+"/"+epID+"/deliveries", nd.Admin, nil)
			if st != 200 {
				return nil
			}
			data, _ := l["data"].([]any)
			return data
		}
		// Every delivery the sink received (all succeeded) is listed on
		// every node, whichever node sent it.
		var first map[string]any
		listedEverywhere := func() bool {
			want := sink.signedFor(t, evt, secret)
			for _, nd := range nodes {
				d := deliveries(nd)
				if len(d) != want {
					return false
				}
				first = d[len(d)-1].(map[string]any)
			}
			return true
		}
		eventually(t, 5*time.Second, "the deliveries listed on every node", listedEverywhere)
		require.Equal(t, true, first["succeeded"], "%v", first)
		// Sent again through a node that is not the owner.
		via := a
		if via.name == owner {
			via = c
		}
		before := sink.signedFor(t, evt, secret)
		st, m := retry503(t, func() (int, map[string]any) {
			return do(t, "POST", fmt.Sprintf("%s%s/%s/deliveries/%s/resend", via.URL, base, epID, first["id"]), via.Admin, nil)
		})
		require.Equal(t, 202, st, "%v", m)
		eventually(t, 20*time.Second, "the resent webhook delivered", func() bool { return sink.signedFor(t, evt, secret) > before })
		eventually(t, 5*time.Second, "the resend listed on every node", listedEverywhere)
		// Deleted through B: its log goes on every node.
		st, m = retry503(t, func() (int, map[string]any) { return do(t, "DELETE", b.URL+base+"/"+epID, b.Admin, nil) })
		require.Equal(t, 200, st, "%v", m)
		for _, nd := range nodes {
			eventually(t, 5*time.Second, "the log dropped on "+nd.name, func() bool {
				n := 0
				require.NoError(t, nd.Main.System().Store().Scan([]byte("whlog/"+epID+"/"), func(_, _ []byte) error { n++; return nil }))
				return n == 0
			})
		}
	})
}
