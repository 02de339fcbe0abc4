package console_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
	"ticketd/event"
)

// api calls the service's JSON API with key and returns the decoded
// answer.
func api(t *testing.T, s *apptest.Service, key, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := nethttp.NewRequest(method, s.URL+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := nethttp.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out
}

// sell places an order of one ticket with the secret key, confirms it and
// pays it through a signed sandbox webhook; it returns the order number.
func sell(t *testing.T, s *apptest.Service, key, eventID, typeID, email, name string) string {
	t.Helper()
	st, o := api(t, s, key, "POST", "/v1/events/"+eventID+"/orders", map[string]any{"email": email, "name": name,
		"items": []map[string]any{{"itemType": "registration_type", "itemId": typeID, "quantity": 1}}})
	require.Equal(t, 201, st, "%v", o)
	num := o["orderNumber"].(string)
	st, o = api(t, s, key, "POST", "/v1/events/"+eventID+"/orders/"+num+"/confirm",
		map[string]any{"successUrl": "https://shop.example.com/ok", "cancelUrl": "https://shop.example.com/cancel"})
	require.Equal(t, 200, st, "%v", o)
	body := []byte(fmt.Sprintf(`{"id":%q,"type":"payment.succeeded","data":{"paymentId":%q,"orderNumber":%q,"amount":%v,"currency":%q}}`,
		"dlv_"+num, o["paymentId"], num, o["totalAmount"], o["currency"]))
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, []byte(apptest.WebhookSecret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	req, _ := nethttp.NewRequest("POST", s.URL+"/webhooks/payments/sandbox", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Payment-Signature", "t="+ts+",v1="+hex.EncodeToString(mac.Sum(nil)))
	res, err := nethttp.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	return num
}

var (
	typeRE = regexp.MustCompile(`ticket-types/(tt_[A-Za-z0-9]+)"`)
	codeRE = regexp.MustCompile(`code <span class="mono">([^<]+)</span>`)
)

// secretKey creates a secret key on the console's keys page.
func (m *member) secretKey(unit string) string {
	m.t.Helper()
	m.get("/console/units/" + unit + "/keys")
	p := m.post("/console/units/"+unit+"/keys", "type", "secret", "name", "server")
	require.Equal(m.t, 201, p.Status, p.Body)
	return match(m.t, keyRE, p.Body)
}

// TestOrdersRefundCSVAndDoor: after a sale, the orders list finds the
// order by email and by number, the order page shows its lines and the
// refund policy, a refund goes through the provider, both CSVs download,
// and a door member checks the buyer in at the door page, once.
func TestOrdersRefundCSVAndDoor(t *testing.T) {
	s := apptest.Start(t)
	op := operator(t, s)
	unit := op.newUnit("Sales Unit")
	ev := op.newEvent(unit, "Concert")
	require.Equal(t, 303, op.post("/console/events/"+ev+"/publish").Status)
	tt := match(t, typeRE, op.get("/console/events/"+ev).Body)
	key := op.secretKey(unit)
	num := sell(t, s, key, ev, tt, "buyer@example.com", "Bea Buyer")
	num2 := sell(t, s, key, ev, tt, "=cmd@example.com", "=HYPERLINK(1)")

	// The dashboard and its live fragment count both sales.
	p := op.get("/console/events/" + ev + "/dashboard")
	require.Equal(t, 200, p.Status)
	assert.Contains(t, p.Body, `<b id="stat-sold">2</b>`)
	assert.Contains(t, p.Body, "<b id=\"stat-revenue\">50,00\u00a0€</b>")
	assert.Contains(t, p.Body, `<svg class="chart"`)
	p = op.get("/console/events/" + ev + "/dashboard/live")
	assert.Contains(t, p.Body, `<b id="stat-sold">2</b>`)
	assert.NotContains(t, p.Body, "<html")

	p = op.get("/console/events/" + ev + "/orders?q=buyer@example.com")
	require.Equal(t, 200, p.Status)
	assert.Contains(t, p.Body, num)
	assert.NotContains(t, p.Body, num2)
	p = op.get("/console/events/" + ev + "/orders?q=" + num2)
	assert.Contains(t, p.Body, num2)
	p = op.get("/console/events/" + ev + "/orders?status=refunded")
	assert.Contains(t, p.Body, "No order matches: try another search.")

	p = op.get("/console/events/" + ev + "/orders/" + num)
	require.Equal(t, 200, p.Status)
	assert.Contains(t, p.Body, "General")
	assert.Contains(t, p.Body, "Refundable")
	p = op.post("/console/events/"+ev+"/orders/"+num+"/refund", "amount", "abc")
	assert.Equal(t, 400, p.Status)
	assert.Contains(t, p.Body, `value="abc"`)
	p = op.post("/console/events/"+ev+"/orders/"+num+"/refund", "reason", "asked")
	require.Equal(t, 303, p.Status, p.Body)
	p = op.get("/console/events/" + ev + "/orders/" + num)
	assert.Contains(t, p.Body, `<span class="badge" id="order-status">refunded</span>`)
	assert.Contains(t, p.Body, `<td data-label="Status">done</td>`, "the refund's status in words")

	p = op.get("/console/events/" + ev + "/attendees.csv")
	require.Equal(t, 200, p.Status)
	assert.Equal(t, "text/csv; charset=utf-8", p.Header.Get("Content-Type"))
	assert.Contains(t, p.Body, "email,name,ticketType,status,checkinCode,registrationId,orderId,createdAt\n")
	assert.Contains(t, p.Body, "buyer@example.com,Bea Buyer,General,cancelled,")
	assert.Contains(t, p.Body, "'=cmd@example.com,'=HYPERLINK(1),General,confirmed", "formula cells neutralised")
	p = op.get("/console/events/" + ev + "/orders.csv")
	assert.Contains(t, p.Body, num+",refunded,buyer@example.com,Bea Buyer,General x1,25,EUR,")
	assert.NotContains(t, p.Body, "€", "the export keeps plain decimals while the pages write 25,00 €")

	// Registration actions from the attendees page: a new pass link; a
	// refused action comes back as the page's error.
	p = op.get("/console/events/" + ev + "/attendees?status=confirmed")
	confirmed := match(t, regexp.MustCompile(`/registrations/(reg_[A-Za-z0-9]+)/rotate-pass`), p.Body)
	p = op.post("/console/events/"+ev+"/registrations/"+confirmed+"/rotate-pass", "status", "confirmed")
	require.Equal(t, 303, p.Status, p.Body)
	assert.Equal(t, "/console/events/"+ev+"/attendees?status=confirmed", p.Header.Get("Location"))
	p = op.post("/console/events/" + ev + "/registrations/" + confirmed + "/approve")
	require.Equal(t, 303, p.Status, p.Body)
	p = op.get(p.Header.Get("Location"))
	assert.Contains(t, p.Body, `role="alert"`, "approving a confirmed registration is refused on the page")
	assert.Equal(t, 404, op.post("/console/events/"+ev+"/registrations/"+confirmed+"/explode").Status)

	// The developer log has the sales' API requests.
	p = op.get("/console/units/" + unit + "/request-log?method=post&status=201")
	require.Equal(t, 200, p.Status)
	assert.Contains(t, p.Body, "POST /v1/events/"+ev+"/orders")
	assert.NotContains(t, p.Body, "/confirm", "filtered by status")

	// The operator's mail outbox: without an SMTP server the ticket mails
	// wait there; only parked mail can be retried.
	p = op.get("/console/outbox")
	require.Equal(t, 200, p.Status)
	assert.Contains(t, p.Body, "=cmd@example.com")
	assert.Equal(t, 404, op.post("/console/outbox/nope/retry").Status)
	assert.Equal(t, 403, accept(t, op.invite(unit, "v@example.com", "owner"), "V", "viewer password").get("/console/outbox").Status)

	// Redemption codes: a batch minted, downloaded, one disabled; a
	// refused batch keeps what was typed.
	p = op.post("/console/events/"+ev+"/codes", "registrationTypeId", tt, "count", "5000", "label", "VIP")
	assert.Equal(t, 400, p.Status)
	assert.Contains(t, p.Body, `value="5000"`)
	require.Equal(t, 303, op.post("/console/events/"+ev+"/codes", "registrationTypeId", tt, "count", "3", "label", "VIP").Status)
	p = op.get("/console/events/" + ev + "/codes.csv")
	assert.Equal(t, 4, strings.Count(p.Body, "\n"), p.Body)
	assert.Contains(t, p.Body, ",General,VIP,0,1,active,")
	codeID := match(t, regexp.MustCompile(`/codes/(rc_[A-Za-z0-9]+)/disable`), op.get("/console/events/"+ev+"/codes").Body)
	require.Equal(t, 303, op.post("/console/events/"+ev+"/codes/"+codeID+"/disable").Status)
	assert.Contains(t, op.get("/console/events/"+ev+"/codes.csv").Body, ",disabled,")

	// Promotion codes: a refused one keeps what was typed; one made and
	// disabled.
	p = op.post("/console/events/"+ev+"/promotion-codes", "promoCode", "HALF", "kind", "percent", "off", "150")
	assert.Equal(t, 400, p.Status)
	assert.Contains(t, p.Body, `value="150"`)
	assert.Contains(t, p.Body, `class="field-error"`)
	require.Equal(t, 303, op.post("/console/events/"+ev+"/promotion-codes", "promoCode", "HALF", "kind", "percent", "off", "50",
		"promoExpiresAt", "2030-05-01T12:00").Status)
	p = op.get("/console/events/" + ev + "/codes")
	assert.Contains(t, p.Body, "50%")
	assert.Contains(t, p.Body, "Wed 1 May 2030 12:00 CEST")
	promo := match(t, regexp.MustCompile(`/promotion-codes/([a-z]+_[A-Za-z0-9]+)/disable`), p.Body)
	require.Equal(t, 303, op.post("/console/events/"+ev+"/promotion-codes/"+promo+"/disable").Status)
	assert.Contains(t, op.get("/console/events/"+ev+"/codes").Body, `<td data-label="Status">disabled</td>`)

	// A door member: the door page works; the event page does not.
	door := accept(t, op.invite(unit, "door@example.com", "door"), "Dora Door", "door password 1")
	assert.Equal(t, 403, door.get("/console/events/"+ev).Status)
	p = door.get("/console/events/" + ev + "/door?q=HYPERLINK")
	require.Equal(t, 200, p.Status)
	code := match(t, codeRE, p.Body)
	p = door.get("/console/events/" + ev + "/door?q=" + code)
	require.Contains(t, p.Body, "cmd@example.com")
	regID := match(t, regexp.MustCompile(`name="registrationId" value="([^"]+)"`), p.Body)
	p = door.post("/console/events/"+ev+"/door", "registrationId", regID, "door", "event")
	require.Equal(t, 200, p.Status, p.Body)
	assert.Contains(t, p.Body, "Admitted: =HYPERLINK(1)")
	p = door.post("/console/events/"+ev+"/door", "checkinCode", code, "door", "event")
	assert.Contains(t, p.Body, "Already checked in")
	assert.Contains(t, p.Body, `class="verdict-warn"`, "a second check-in is amber, not green")
	assert.NotContains(t, p.Body, `class="verdict-ok"`)
	assert.Contains(t, p.Body, "Main entrance (event) · the console or the API", "where it was first")
	p = door.get("/console/events/" + ev + "/door?q=" + code)
	assert.Contains(t, p.Body, `class="badge in">in since`, "search results show who is in")
	p = door.post("/console/events/"+ev+"/door", "checkinCode", "nope", "door", "event")
	assert.Equal(t, 409, p.Status)
	assert.True(t, strings.Contains(p.Body, "Refused: "), p.Body)

	// The dashboard's counters moved: the refund, the check-in.
	p = op.get("/console/events/" + ev + "/dashboard/live")
	assert.Contains(t, p.Body, `<b id="stat-sold">1</b>`)
	assert.Contains(t, p.Body, "<b id=\"stat-revenue\">25,00\u00a0€</b>")
	assert.Contains(t, p.Body, `<td data-label="Door">Main entrance (event)</td><td class="num" data-label="Checked in">1</td>`)
}

func listTypes() event.Command { return event.ListTicketTypes{Limit: 10} }

func firstTypeID(t *testing.T, res any) string {
	t.Helper()
	l, ok := res.(event.List[event.TicketType])
	require.True(t, ok, "%T", res)
	require.NotEmpty(t, l.Data)
	return l.Data[0].ID
}

// TestWebhooksPage: an owner adds an endpoint (a refused URL comes back
// next to its field), sees its secret once, and after a sale sees the
// delivery in the endpoint's log; disable and delete are audited.
func TestWebhooksPage(t *testing.T) {
	got := make(chan string, 10)
	hook := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- string(b)
	}))
	defer hook.Close()
	s := apptest.Start(t)
	op := operator(t, s)
	unit := op.newUnit("Hooks Unit")
	ev := op.newEvent(unit, "Hooked")
	require.Equal(t, 303, op.post("/console/events/"+ev+"/publish").Status)
	tt := match(t, typeRE, op.get("/console/events/"+ev).Body)
	key := op.secretKey(unit)

	op.get("/console/units/" + unit + "/webhooks")
	p := op.post("/console/units/"+unit+"/webhooks", "url", "ftp://nope", "eventTypes", "order.paid")
	assert.Equal(t, 400, p.Status)
	assert.Contains(t, p.Body, `value="ftp://nope"`)
	assert.Contains(t, p.Body, `class="field-error"`)
	p = op.post("/console/units/"+unit+"/webhooks", "url", hook.URL+"/in", "eventTypes", "order.paid", "description", "shop")
	require.Equal(t, 201, p.Status, p.Body)
	assert.Contains(t, match(t, regexp.MustCompile(`id="hook-secret"[^>]*value="([^"]+)"`), p.Body), "whsec_")
	endpoint := match(t, regexp.MustCompile(`deliveries=(we_[a-z0-9]+)`), p.Body)

	sell(t, s, key, ev, tt, "hooked@example.com", "H")
	select {
	case b := <-got:
		assert.Contains(t, b, "order.paid")
	case <-time.After(10 * time.Second):
		t.Fatal("no webhook delivered")
	}
	require.Eventually(t, func() bool {
		return strings.Contains(op.get("/console/units/"+unit+"/webhooks?deliveries="+endpoint).Body, "ok 200")
	}, 5*time.Second, 50*time.Millisecond)
	require.Equal(t, 303, op.post("/console/units/"+unit+"/webhooks/"+endpoint+"/disable").Status)
	assert.Contains(t, op.get("/console/units/"+unit+"/webhooks").Body, "disabled")
	require.Equal(t, 303, op.post("/console/units/"+unit+"/webhooks/"+endpoint+"/delete").Status)
	assert.Contains(t, op.get("/console/units/"+unit+"/webhooks").Body, "No endpoints.")
	assert.Equal(t, 404, op.get("/console/units/"+unit+"/webhooks?deliveries="+endpoint).Status)
}
