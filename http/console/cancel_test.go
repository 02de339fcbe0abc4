package console_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
	"ticketd/audit"
)

// TestConsoleCancelOrder: the order page of an open order offers its
// cancel, which frees its places (the API's cancel: the same answer the
// API then reads) and is audited; a paid order offers none, and a cancel
// posted anyway is refused with the core's reason on the order page; a
// viewer may not cancel. (With Stripe, the same cancel expires the
// order's Checkout Session at once: payments/stripe/e2e,
// TestConsoleCancelClosesTheCheckoutSession.)
func TestConsoleCancelOrder(t *testing.T) {
	s := apptest.Start(t)
	op := operator(t, s)
	unit := op.newUnit("Cancel Unit")
	ev := op.newEvent(unit, "Matinee")
	require.Equal(t, 303, op.post("/console/events/"+ev+"/publish").Status)
	tt := match(t, typeRE, op.get("/console/events/"+ev).Body)
	key := op.secretKey(unit)
	paid := sell(t, s, key, ev, tt, "paid@example.com", "Pat Paid")
	st, o := api(t, s, key, "POST", "/v1/events/"+ev+"/orders", map[string]any{"email": "open@example.com",
		"items": []map[string]any{{"itemType": "registration_type", "itemId": tt, "quantity": 1}}})
	require.Equal(t, 201, st, "%v", o)
	open := o["orderNumber"].(string)

	viewer := accept(t, op.invite(unit, "viewer@example.com", "viewer"), "Vic Viewer", "viewer password 1")
	p := viewer.get("/console/events/" + ev + "/orders/" + open)
	require.Equal(t, 200, p.Status)
	assert.NotContains(t, p.Body, `id="cancel-order"`, "a viewer is offered no cancel")
	assert.Equal(t, 403, viewer.post("/console/events/"+ev+"/orders/"+open+"/cancel").Status)

	p = op.get("/console/events/" + ev + "/orders/" + paid)
	assert.NotContains(t, p.Body, `id="cancel-order"`, "a paid order is refunded, not cancelled")
	p = op.post("/console/events/" + ev + "/orders/" + paid + "/cancel")
	assert.Equal(t, 409, p.Status)
	assert.Contains(t, p.Body, "refunds are made in the console")
	_, o = api(t, s, key, "GET", "/v1/events/"+ev+"/orders/"+paid, nil)
	assert.Equal(t, "paid", o["status"])

	p = op.get("/console/events/" + ev + "/orders/" + open)
	require.Contains(t, p.Body, `id="cancel-order"`)
	p = op.post("/console/events/" + ev + "/orders/" + open + "/cancel")
	require.Equal(t, 303, p.Status, p.Body)
	assert.Equal(t, "/console/events/"+ev+"/orders/"+open, p.Header.Get("Location"))
	_, o = api(t, s, key, "GET", "/v1/events/"+ev+"/orders/"+open, nil)
	assert.Equal(t, "cancelled", o["status"])
	p = op.get("/console/events/" + ev + "/orders/" + open)
	assert.Contains(t, p.Body, `<span class="badge" id="order-status">cancelled</span>`)
	assert.NotContains(t, p.Body, `id="cancel-order"`)

	entries, _, err := s.Main.Audit().List(unit, audit.Filter{OperationID: "console.cancelOrder"}, "", 10)
	require.NoError(t, err)
	require.Len(t, entries, 1, "the refused cancels are not audited")
	assert.Equal(t, open, entries[0].TargetIDs["orderNumber"])
	assert.Equal(t, ev, entries[0].TargetIDs["eventId"])
	assert.Equal(t, "admin", entries[0].ActorType)
}
