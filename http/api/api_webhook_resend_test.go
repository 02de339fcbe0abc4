package api_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app"
	"ticketd/app/apptest"
	"ticketd/webhooks"
)

// TestAPIResendWebhookDelivery: a delivery in an endpoint's log is sent
// again through real HTTP to a real receiver: the same body and event id,
// signed, logged as a new delivery; an unknown delivery or another unit's
// endpoint is 404, a disabled endpoint 412, and the resend is audited.
func TestAPIResendWebhookDelivery(t *testing.T) {
	t.Parallel()
	f := startHookService(t, 5)
	u, other := f.unit(t), f.unit(t)
	adm := f.admin(t)
	rc := newHookReceiver(t, 0)
	base := "/admin/v1/business-units/" + u.ID + "/webhook-endpoints"
	ep := apiWant(t, adm.Do("POST", base, map[string]any{"url": rc.srv.URL, "eventTypes": []string{"registration.created"}}), 201)
	rc.trust(apiS(ep, "secret"))
	epBase := base + "/" + apiS(ep, "id")

	ev := apiPublished(t, u.dev)
	tt := apiOpenType(t, u.dev, ev, nil)
	apiRegister(t, u.dev, ev, tt, "resend@example.com")
	var log []map[string]any
	require.Eventually(t, func() bool {
		log = apiData(t, apiWant(t, adm.Do("GET", epBase+"/deliveries", nil), 200))
		return len(log) == 1
	}, 10*time.Second, 20*time.Millisecond)
	first := apiS(log[0], "id")
	require.NotEmpty(t, first)

	res := apiWant(t, adm.Do("POST", epBase+"/deliveries/"+first+"/resend", nil), 202)
	assert.Equal(t, first, apiS(res, "resendOf"))
	assert.Equal(t, apiS(log[0], "eventId"), apiS(res, "eventId"))
	assert.Equal(t, "registration.created", apiS(res, "type"))
	require.Eventually(t, func() bool { return len(rc.deliveries()) == 2 }, 10*time.Second, 10*time.Millisecond)
	ds := rc.deliveries()
	assert.Equal(t, string(ds[0].Body), string(ds[1].Body), "the same bytes")
	assert.Equal(t, ds[0].ID, ds[1].ID, "the same event id")
	assert.NotEmpty(t, ds[1].VerifiedBy, "signed with the endpoint's secret")
	require.Eventually(t, func() bool {
		log = apiData(t, apiWant(t, adm.Do("GET", epBase+"/deliveries", nil), 200))
		return len(log) == 2
	}, 10*time.Second, 20*time.Millisecond)
	assert.Equal(t, true, log[0]["succeeded"])
	assert.NotEqual(t, first, apiS(log[0], "id"), "a new delivery in the log")

	apiWantErr(t, adm.Do("POST", epBase+"/deliveries/0000000000000000-00000000/resend", nil), 404, "NOT_FOUND")
	apiWantErr(t, adm.Do("POST", "/admin/v1/business-units/"+other.ID+"/webhook-endpoints/"+apiS(ep, "id")+"/deliveries/"+first+"/resend", nil), 404, "NOT_FOUND")
	apiWant(t, adm.Do("POST", epBase+"/disable", nil), 200)
	e := apiWantErr(t, adm.Do("POST", epBase+"/deliveries/"+first+"/resend", nil), 412, "FAILED_PRECONDITION")
	assert.Equal(t, "WEBHOOK_ENDPOINT_DISABLED", e["reason"])
	time.Sleep(50 * time.Millisecond)
	assert.Len(t, rc.deliveries(), 2, "nothing else was sent")

	audit := apiWant(t, adm.Do("GET", "/admin/v1/business-units/"+u.ID+"/audit-log?operationId=resendWebhookDelivery", nil), 200)
	assert.NotEmpty(t, apiData(t, audit), "the resend is in the audit log")
}

// TestAPIKeyedResendAndReplayLostAnswersReplayed: a keyed resend of a
// logged delivery and a keyed replay of an endpoint's log, whose answers
// are lost (the crash hook drops the pipeline's store of them, as a kill
// -9 between the queueing and the answer would) and the service
// restarted, then sent again with the same keys, replay their first
// answers and queue nothing more: the receiver gets nothing after the
// retries (issue 31 item 3; decisions §20). Before, the record was stored after the tasks were
// queued, and each retry queued its delivery again.
func TestAPIKeyedResendAndReplayLostAnswersReplayed(t *testing.T) {
	t.Parallel()
	lost := &apptest.Lost{}
	tune := func(c *app.Config) {
		c.Tune = &app.Tuning{Webhooks: func(w *webhooks.Config) {
			w.BackoffMin, w.BackoffMax = 10*time.Millisecond, 40*time.Millisecond
			w.PollInterval, w.Timeout = 10*time.Millisecond, 2*time.Second
		}}
	}
	f := newAPIFx(t, tune, apptest.LoseAnswers("lost-", lost))
	u := f.unit(t)
	rc := newHookReceiver(t, 0)
	base := "/admin/v1/business-units/" + u.ID + "/webhook-endpoints"
	ep := apiWant(t, f.admin(t).Do("POST", base, map[string]any{"url": rc.srv.URL, "eventTypes": []string{"registration.created"}}), 201)
	rc.trust(apiS(ep, "secret"))
	epBase := base + "/" + apiS(ep, "id")
	ev := apiPublished(t, u.dev)
	tt := apiOpenType(t, u.dev, ev, nil)
	apiRegister(t, u.dev, ev, tt, "lost@example.com")
	var log []map[string]any
	require.Eventually(t, func() bool {
		log = apiData(t, apiWant(t, f.admin(t).Do("GET", epBase+"/deliveries", nil), 200))
		return len(log) == 1
	}, 10*time.Second, 20*time.Millisecond)
	delivery := apiS(log[0], "id")

	resend := func() *apiResp {
		return f.admin(t).WithHeader("Idempotency-Key", "lost-resend").Do("POST", epBase+"/deliveries/"+delivery+"/resend", nil)
	}
	replay := func() *apiResp {
		return f.admin(t).WithHeader("Idempotency-Key", "lost-replay").Do("POST", epBase+"/replay", map[string]any{"since": "2020-01-01T00:00:00Z"})
	}
	firstResend := resend()
	require.Equal(t, 202, firstResend.Status, "%s", firstResend.Body)
	require.Eventually(t, func() bool { return len(rc.deliveries()) == 2 }, 10*time.Second, 10*time.Millisecond)
	firstReplay := replay()
	require.Equal(t, 202, firstReplay.Status, "%s", firstReplay.Body)
	require.EqualValues(t, 1, apiWant(t, firstReplay, 202)["queued"])
	require.Eventually(t, func() bool { return len(rc.deliveries()) == 3 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{"lost-resend", "lost-replay"}, lost.Keys(), "the crash hook dropped both answers")

	f.s.Restart()
	// Deliveries are at least once: a restart may send one again (its
	// outcome not yet stored at the close). Count from where it settles.
	settled := func() int {
		n := len(rc.deliveries())
		for quiet := time.Now(); time.Since(quiet) < 500*time.Millisecond; time.Sleep(20 * time.Millisecond) {
			if m := len(rc.deliveries()); m != n {
				n, quiet = m, time.Now()
			}
		}
		return n
	}
	before := settled()
	for name, send := range map[string]func() *apiResp{"resend": resend, "replay": replay} {
		first := firstResend
		if name == "replay" {
			first = firstReplay
		}
		again := send()
		require.Equal(t, 202, again.Status, "%s: %s", name, again.Body)
		require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"), "the retried %s queued again: %s", name, again.Body)
		require.JSONEq(t, string(first.Body), string(again.Body), name)
	}
	require.Equal(t, before, settled(), "a retry queued a delivery again")
}
