package api_test

// Black-box tests of the console's developer log, audit log and
// automations (signed outbound webhooks), through the contract client.

import (
	"encoding/json"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app"
	"ticketd/webhooks"
)

func TestAPIConsoleLogs(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)

	t.Run("request log: every request of a key, filters, paging, isolation", func(t *testing.T) {
		t.Parallel()
		s := f.store(t, nil)
		adm := f.admin(t)
		apiWant(t, s.sf.Do("GET", s.sfPath(""), nil), 200)
		apiWantErr(t, s.dev.Do("GET", "/v1/events/evt_01doesnotexist0000000000", nil), 404, "NOT_FOUND")
		base := "/admin/v1/business-units/" + s.ID + "/request-log"
		all := apiData(t, apiWant(t, adm.Do("GET", base, nil), 200))
		require.NotEmpty(t, all)
		newest := all[0]
		assert.Equal(t, "GET", newest["method"])
		assert.Equal(t, "/v1/events/{eventId}", newest["route"])
		assert.Equal(t, "/v1/events/evt_01doesnotexist0000000000", newest["path"])
		assert.EqualValues(t, 404, newest["status"])
		assert.Equal(t, "developer", newest["surface"])
		assert.Equal(t, "127.0.0.1", newest["clientIp"])
		assert.NotEmpty(t, newest["requestId"])
		assert.NotEmpty(t, newest["keyId"])
		sf := all[1]
		assert.Equal(t, "storefront", sf["surface"], "storefront traffic is in the developer log")
		assert.Equal(t, "/storefront/v1/events/"+s.ev, sf["path"])

		nf := apiData(t, apiWant(t, adm.Do("GET", base+"?status=404", nil), 200))
		require.Len(t, nf, 1)
		byKey := apiData(t, apiWant(t, adm.Do("GET", base+"?keyId="+apiS(sf, "keyId"), nil), 200))
		require.Len(t, byKey, 1)
		posts := apiData(t, apiWant(t, adm.Do("GET", base+"?method=POST", nil), 200))
		for _, p := range posts {
			assert.Equal(t, "POST", p["method"])
		}
		assert.NotEmpty(t, posts, "creating the event and type were POSTs")
		future := apiData(t, apiWant(t, adm.Do("GET", base+"?since=2100-01-01T00:00:00Z", nil), 200))
		assert.Empty(t, future)
		past := apiData(t, apiWant(t, adm.Do("GET", base+"?until=2000-01-01T00:00:00Z", nil), 200))
		assert.Empty(t, past)

		// Paging walks every entry once.
		var seen []string
		next := base + "?limit=2"
		for next != "" {
			page := apiWant(t, adm.Do("GET", next, nil), 200)
			seen = append(seen, apiIDs(t, page)...)
			next = ""
			if c, ok := page["nextCursor"].(string); ok {
				next = base + "?limit=2&cursor=" + c
			}
		}
		assert.Len(t, seen, len(all)+0, "the admin's own reads are not in a unit's log")

		other := f.unit(t)
		assert.Empty(t, apiData(t, apiWant(t, adm.Do("GET", "/admin/v1/business-units/"+other.ID+"/request-log", nil), 200)))
		apiWantErr(t, adm.Do("GET", "/admin/v1/business-units/bu_missing/request-log", nil), 404, "NOT_FOUND")
		apiWant400(t, adm.AllowInvalidRequest().Do("GET", base+"?status=99", nil), "status")
	})

	t.Run("audit log: developer and console writes with before/after, not storefront", func(t *testing.T) {
		t.Parallel()
		s := f.store(t, nil)
		adm := f.admin(t)
		apiWant(t, s.dev.Do("PATCH", "/v1/events/"+s.ev, map[string]any{"name": "Renamed"}), 200)
		apiWant(t, s.sfOrder(t, s.sf, s.tt, "buyer@example.com", nil), 201)
		key := apiWant(t, adm.Do("POST", "/admin/v1/business-units/"+s.ID+"/api-keys", map[string]any{"type": "secret"}), 201)
		base := "/admin/v1/business-units/" + s.ID + "/audit-log"
		all := apiData(t, apiWant(t, adm.Do("GET", base, nil), 200))
		require.NotEmpty(t, all)

		newest := all[0]
		assert.Equal(t, "admin", newest["actor"])
		assert.Equal(t, "createApiKey", newest["operationId"])
		assert.NotContains(t, string(mustJSON(t, newest)), apiS(key, "key"), "secrets never reach the audit log")

		var patch map[string]any
		for _, e := range all {
			assert.NotContains(t, e["route"], "/storefront/", "storefront traffic is not audited")
			if e["operationId"] == "updateEvent" && patch == nil {
				patch = e // the newest: the rename (the oldest is the publish)
			}
		}
		require.NotNil(t, patch, "the PATCH is audited: %v", all)
		assert.Equal(t, "secret", patch["actorType"])
		assert.True(t, strings.HasPrefix(apiS(patch, "actor"), "key_") || apiS(patch, "actor") != "", "the key id")
		assert.Equal(t, s.ev, apiM(patch, "targetIds")["eventId"])
		assert.Equal(t, "Gophercon", apiM(patch, "before")["name"], "the record before the write")
		assert.Equal(t, "Renamed", apiM(patch, "after")["name"])

		devOnly := apiData(t, apiWant(t, adm.Do("GET", base+"?keyId="+apiS(patch, "actor"), nil), 200))
		for _, e := range devOnly {
			assert.Equal(t, apiS(patch, "actor"), e["actor"])
		}
		assert.Len(t, devOnly, len(all)-1, "every write but the console's was the secret key's")
		byOp := apiData(t, apiWant(t, adm.Do("GET", base+"?operationId=updateEvent&method=PATCH", nil), 200))
		require.Len(t, byOp, 2, "publish and rename")
		byTarget := apiData(t, apiWant(t, adm.Do("GET", base+"?targetId="+s.ev, nil), 200))
		assert.NotEmpty(t, byTarget)
		assert.Empty(t, apiData(t, apiWant(t, adm.Do("GET", base+"?since=2100-01-01T00:00:00Z", nil), 200)))

		page := apiWant(t, adm.Do("GET", base+"?limit=1", nil), 200)
		require.Equal(t, true, page["hasMore"])
		p2 := apiWant(t, adm.Do("GET", base+"?limit=1&cursor="+apiS(page, "nextCursor"), nil), 200)
		assert.Equal(t, apiS(all[1], "id"), apiIDs(t, p2)[0])

		other := f.unit(t)
		assert.Empty(t, apiData(t, apiWant(t, adm.Do("GET", "/admin/v1/business-units/"+other.ID+"/audit-log", nil), 200)),
			"another unit's log holds none of these")
		apiWantErr(t, adm.Do("GET", "/admin/v1/business-units/bu_missing/audit-log", nil), 404, "NOT_FOUND")
	})

	t.Run("webhook endpoints: CRUD, secret once, isolation", func(t *testing.T) {
		t.Parallel()
		u := f.unit(t)
		other := f.unit(t)
		adm := f.admin(t)
		base := "/admin/v1/business-units/" + u.ID + "/webhook-endpoints"
		ep := apiWant(t, adm.Do("POST", base, map[string]any{"url": "https://hooks.example.test/in",
			"eventTypes": []string{"order.paid"}, "description": "crm"}), 201)
		secret := apiS(ep, "secret")
		require.True(t, strings.HasPrefix(secret, "whsec_"))
		id := apiS(ep, "id")
		got := apiWant(t, adm.Do("GET", base+"/"+id, nil), 200)
		assert.Nil(t, got["secret"], "the secret is shown once")
		assert.Equal(t, true, got["enabled"])
		assert.Equal(t, []string{id}, apiIDs(t, apiWant(t, adm.Do("GET", base, nil), 200)))

		upd := apiWant(t, adm.Do("PATCH", base+"/"+id, map[string]any{"eventTypes": []string{"order.paid", "checkin.created"}}), 200)
		assert.Len(t, upd["eventTypes"], 2)
		assert.Equal(t, "crm", upd["description"])
		dis := apiWant(t, adm.Do("POST", base+"/"+id+"/disable", nil), 200)
		assert.Equal(t, false, dis["enabled"])
		en := apiWant(t, adm.Do("POST", base+"/"+id+"/enable", nil), 200)
		assert.Equal(t, true, en["enabled"])
		rot := apiWant(t, adm.Do("POST", base+"/"+id+"/rotate-secret", nil), 200)
		assert.NotEqual(t, secret, apiS(rot, "secret"))
		assert.NotNil(t, rot["previousSecretUntil"])
		assert.Empty(t, apiData(t, apiWant(t, adm.Do("GET", base+"/"+id+"/deliveries", nil), 200)))

		apiWant400(t, adm.Do("POST", base, map[string]any{"url": "ftp://x.example/in", "eventTypes": []string{"order.paid"}}), "url")
		apiWant400(t, adm.AllowInvalidRequest().Do("POST", base, map[string]any{"url": "https://x.example/in", "eventTypes": []string{"nope"}}), "eventTypes")

		// Another unit's path never reaches this endpoint.
		obase := "/admin/v1/business-units/" + other.ID + "/webhook-endpoints"
		apiWantErr(t, adm.Do("GET", obase+"/"+id, nil), 404, "NOT_FOUND")
		apiWantErr(t, adm.Do("PATCH", obase+"/"+id, map[string]any{"description": "x"}), 404, "NOT_FOUND")
		apiWantErr(t, adm.Do("POST", obase+"/"+id+"/rotate-secret", nil), 404, "NOT_FOUND")
		apiWantErr(t, adm.Do("GET", obase+"/"+id+"/deliveries", nil), 404, "NOT_FOUND")
		apiWantErr(t, adm.Do("DELETE", obase+"/"+id, nil), 404, "NOT_FOUND")
		assert.Empty(t, apiData(t, apiWant(t, adm.Do("GET", obase, nil), 200)))
		apiWantErr(t, adm.Do("GET", "/admin/v1/business-units/bu_missing/webhook-endpoints", nil), 404, "NOT_FOUND")

		// The console's writes are audited, secrets redacted.
		audit := apiWant(t, adm.Do("GET", "/admin/v1/business-units/"+u.ID+"/audit-log?operationId=rotateWebhookSecret", nil), 200)
		require.Len(t, apiData(t, audit), 1)
		assert.NotContains(t, string(mustJSON(t, audit)), "whsec_")

		apiWant(t, adm.Do("DELETE", base+"/"+id, nil), 200)
		apiWantErr(t, adm.Do("GET", base+"/"+id, nil), 404, "NOT_FOUND")
	})
}

func mustJSON(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// hookReceiver is a real webhook receiver on a loopback port: it verifies
// each delivery's signature against the secrets it is told, and answers
// 500 to the first fail deliveries.
type hookReceiver struct {
	mu      sync.Mutex
	secrets []string
	fail    int
	got     []hookDelivery
	srv     *httptest.Server
}

type hookDelivery struct {
	ID, Type   string
	Sig        string
	VerifiedBy []string // which of the secrets verified it
	Status     int
	Body       []byte
}

func newHookReceiver(t *testing.T, fail int) *hookReceiver {
	r := &hookReceiver{fail: fail}
	r.srv = httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, req *nethttp.Request) {
		b, _ := io.ReadAll(req.Body)
		var body struct{ ID, Type string }
		_ = json.Unmarshal(b, &body)
		sig := req.Header.Get("Webhook-Signature")
		r.mu.Lock()
		d := hookDelivery{ID: body.ID, Type: body.Type, Sig: sig, Body: b, Status: 200}
		for _, s := range r.secrets {
			if webhooks.Verify(sig, b, s, time.Now(), 5*time.Minute) == nil {
				d.VerifiedBy = append(d.VerifiedBy, s)
			}
		}
		if len(d.VerifiedBy) == 0 {
			d.Status = 400
		} else if len(r.got) < r.fail {
			d.Status = 500
		}
		r.got = append(r.got, d)
		r.mu.Unlock()
		w.WriteHeader(d.Status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *hookReceiver) trust(secret string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets = append(r.secrets, secret)
}

func (r *hookReceiver) deliveries() []hookDelivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hookDelivery(nil), r.got...)
}

// startHookService starts the service with webhook delivery of tiny
// backoffs (app.Main starts the deliverer and wakes it from the actors'
// outbox hook, as in production).
func startHookService(t *testing.T, disableAfter int) *apiFx {
	t.Helper()
	tune := func(c *app.Config) {
		c.WebhookDisableAfter = disableAfter
		c.Tune = &app.Tuning{Webhooks: func(w *webhooks.Config) {
			w.BackoffMin, w.BackoffMax = 10*time.Millisecond, 40*time.Millisecond
			w.PollInterval, w.Timeout = 10*time.Millisecond, 2*time.Second
		}}
	}
	return newAPIFx(t, tune)
}

func TestAPIWebhooksDelivered(t *testing.T) {
	t.Parallel()
	f := startHookService(t, 3)

	t.Run("signed, retried with the same event id, rotation signs with both secrets", func(t *testing.T) {
		u := f.unit(t)
		adm := f.admin(t)
		rc := newHookReceiver(t, 2)
		base := "/admin/v1/business-units/" + u.ID + "/webhook-endpoints"
		ep := apiWant(t, adm.Do("POST", base, map[string]any{"url": rc.srv.URL + "/hooks",
			"eventTypes": []string{"registration.created", "registration.cancelled", "checkin.created"}}), 201)
		rc.trust(apiS(ep, "secret"))
		// Another unit's endpoint on the same receiver must see nothing.
		other := f.unit(t)
		apiWant(t, adm.Do("POST", "/admin/v1/business-units/"+other.ID+"/webhook-endpoints",
			map[string]any{"url": rc.srv.URL + "/other", "eventTypes": []string{"registration.created"}}), 201)

		ev := apiPublished(t, u.dev)
		tt := apiOpenType(t, u.dev, ev, nil)
		reg := apiRegister(t, u.dev, ev, tt, "hook@example.com")

		require.Eventually(t, func() bool { return len(rc.deliveries()) >= 3 }, 10*time.Second, 10*time.Millisecond)
		ds := rc.deliveries()
		require.Len(t, ds, 3, "one event: two failures, then success")
		for _, d := range ds {
			assert.Equal(t, ds[0].ID, d.ID, "the same event id on every retry")
			assert.Equal(t, "registration.created", d.Type)
			assert.NotEmpty(t, d.VerifiedBy, "signature verifies")
			var body map[string]any
			require.NoError(t, json.Unmarshal(d.Body, &body))
			assert.Equal(t, apiS(reg, "id"), apiM(body, "data")["id"])
			assert.NotEmpty(t, body["createdAt"])
		}
		assert.Equal(t, []int{500, 500, 200}, []int{ds[0].Status, ds[1].Status, ds[2].Status})

		// The receiver sees the third attempt before the deliverer records
		// its outcome: wait for the log to catch up.
		var log []map[string]any
		require.Eventually(t, func() bool {
			log = apiData(t, apiWant(t, adm.Do("GET", base+"/"+apiS(ep, "id")+"/deliveries", nil), 200))
			return len(log) >= 3
		}, 10*time.Second, 20*time.Millisecond)
		require.Len(t, log, 3)
		assert.Equal(t, true, log[0]["succeeded"])
		assert.EqualValues(t, 3, log[0]["attempt"])
		assert.EqualValues(t, 500, log[2]["statusCode"])

		rot := apiWant(t, adm.Do("POST", base+"/"+apiS(ep, "id")+"/rotate-secret", nil), 200)
		rc.trust(apiS(rot, "secret"))
		apiWant(t, u.dev.Do("POST", "/v1/events/"+ev+"/registrations/"+apiS(reg, "id")+"/cancel", nil), 200)
		require.Eventually(t, func() bool { return len(rc.deliveries()) >= 4 }, 10*time.Second, 10*time.Millisecond)
		last := rc.deliveries()[3]
		assert.Equal(t, "registration.cancelled", last.Type)
		assert.Len(t, last.VerifiedBy, 2, "old and new secret both sign during the grace period: %s", last.Sig)
		assert.Equal(t, 2, strings.Count(last.Sig, "v1="))
		time.Sleep(50 * time.Millisecond)
		assert.Len(t, rc.deliveries(), 4, "nothing for the other unit, nothing unsubscribed")
	})

	t.Run("each succeeded refund, partial or full, fires order.refunded with the order", func(t *testing.T) {
		u := f.unit(t)
		adm := f.admin(t)
		rc := newHookReceiver(t, 0)
		ep := apiWant(t, adm.Do("POST", "/admin/v1/business-units/"+u.ID+"/webhook-endpoints", map[string]any{
			"url": rc.srv.URL, "eventTypes": []string{"order.refunded"}}), 201)
		rc.trust(apiS(ep, "secret"))
		ev := apiPublished(t, u.dev)
		s := apiShop{c: u.dev, ev: ev, tt: apiOpenType(t, u.dev, ev, map[string]any{"priceAmount": 40})}
		o := apiPaid(t, f, s, "refunded@example.com", "40")
		number := apiS(o, "orderNumber")

		apiWant(t, adm.Do("POST", s.refundPath(number), map[string]any{"amount": 15}), 200)
		require.Eventually(t, func() bool { return len(rc.deliveries()) >= 1 }, 10*time.Second, 10*time.Millisecond)
		apiWant(t, adm.Do("POST", s.refundPath(number), nil), 200)
		require.Eventually(t, func() bool { return len(rc.deliveries()) >= 2 }, 10*time.Second, 10*time.Millisecond)
		var body struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		for i, want := range []struct {
			status  string
			refunds int
		}{{"paid", 1}, {"refunded", 2}} {
			d := rc.deliveries()[i]
			assert.Equal(t, "order.refunded", d.Type)
			assert.NotEmpty(t, d.VerifiedBy)
			require.NoError(t, json.Unmarshal(d.Body, &body))
			assert.Equal(t, "order.refunded", body.Type)
			assert.Equal(t, number, body.Data["orderNumber"])
			assert.Equal(t, want.status, body.Data["status"])
			refunds := apiRefunds(t, body.Data)
			require.Len(t, refunds, want.refunds)
			assert.Equal(t, "succeeded", refunds[want.refunds-1]["status"])
		}
		time.Sleep(50 * time.Millisecond)
		assert.Len(t, rc.deliveries(), 2, "one webhook per succeeded refund")
	})

	t.Run("a paid order and a check-in fire their webhooks; the ticket mail still goes out", func(t *testing.T) {
		u := f.unit(t)
		adm := f.admin(t)
		rc := newHookReceiver(t, 0)
		ep := apiWant(t, adm.Do("POST", "/admin/v1/business-units/"+u.ID+"/webhook-endpoints", map[string]any{
			"url": rc.srv.URL, "eventTypes": []string{"order.paid", "checkin.created"}}), 201)
		rc.trust(apiS(ep, "secret"))
		ev := apiPublished(t, u.dev)
		s := apiShop{c: u.dev, ev: ev, tt: apiOpenType(t, u.dev, ev, map[string]any{"priceAmount": 25})}
		o := apiAwaiting(t, s, "payer@example.com")
		st, b := apiWebhook(t, f.s.URL, apiWebhookSecret, time.Now().Unix(), apiPaymentBody("dlv_hook", "payment.succeeded", o, "25.00"))
		require.Lessf(t, st, 300, "payment webhook: %s", b)
		require.Eventually(t, func() bool { return len(rc.deliveries()) >= 1 }, 10*time.Second, 10*time.Millisecond)
		paid := rc.deliveries()[0]
		assert.Equal(t, "order.paid", paid.Type)
		assert.NotEmpty(t, paid.VerifiedBy)
		var body struct {
			Data map[string]any `json:"data"`
		}
		require.NoError(t, json.Unmarshal(paid.Body, &body))
		assert.Equal(t, apiS(o, "orderNumber"), body.Data["orderNumber"])
		reg := apiS(body.Data, "registrationId")
		require.NotEmpty(t, reg)

		apiWant(t, u.dev.Do("POST", "/v1/events/"+ev+"/checkins", map[string]any{"registrationId": reg, "subjectType": "event"}), 201)
		require.Eventually(t, func() bool { return len(rc.deliveries()) >= 2 }, 10*time.Second, 10*time.Millisecond)
		in := rc.deliveries()[1]
		assert.Equal(t, "checkin.created", in.Type)
		require.NoError(t, json.Unmarshal(in.Body, &body))
		assert.Equal(t, reg, body.Data["registrationId"])

		outbox := apiWant(t, adm.Do("GET", "/admin/v1/outbox", nil), 200)
		found := false
		for _, m := range apiData(t, outbox) {
			found = found || m["registrationId"] == reg
		}
		assert.True(t, found, "the ticket mail is still owed: %v", outbox)
	})

	t.Run("an endpoint that keeps failing is disabled", func(t *testing.T) {
		u := f.unit(t)
		adm := f.admin(t)
		rc := newHookReceiver(t, 1000)
		base := "/admin/v1/business-units/" + u.ID + "/webhook-endpoints"
		ep := apiWant(t, adm.Do("POST", base, map[string]any{"url": rc.srv.URL, "eventTypes": []string{"registration.created"}}), 201)
		rc.trust(apiS(ep, "secret"))
		ev := apiPublished(t, u.dev)
		tt := apiOpenType(t, u.dev, ev, nil)
		apiRegister(t, u.dev, ev, tt, "x@example.com")
		path := base + "/" + apiS(ep, "id")
		require.Eventually(t, func() bool {
			return apiWant(t, adm.Do("GET", path, nil), 200)["enabled"] == false
		}, 10*time.Second, 20*time.Millisecond)
		got := apiWant(t, adm.Do("GET", path, nil), 200)
		assert.Contains(t, got["disabledReason"], "3 consecutive")
		time.Sleep(50 * time.Millisecond)
		assert.Len(t, rc.deliveries(), 3, "no attempt after it was disabled")
	})
}
