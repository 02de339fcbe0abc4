package api_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
