package pages_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
)

// pgOneSeat is a published event whose only ticket type has one place at
// price (major units).
func pgOneSeat(t *testing.T, s *service, key string, price float64) pgEvent {
	t.Helper()
	ev := pgAPI(t, s, key, "POST", "/v1/events", map[string]any{
		"name": "One Seat", "timezone": "Europe/Berlin", "startsAt": time.Now().Add(30 * 24 * time.Hour).UTC().Format(time.RFC3339), "currency": "EUR",
	})
	id := ev["id"].(string)
	tt := pgAPI(t, s, key, "POST", "/v1/events/"+id+"/ticket-types", map[string]any{"name": "The seat", "capacity": 1, "priceAmount": price})
	pgAPI(t, s, key, "PATCH", "/v1/events/"+id+"/ticket-types/"+tt["id"].(string), map[string]any{"status": "open"})
	pgAPI(t, s, key, "PATCH", "/v1/events/"+id, map[string]any{"status": "published"})
	return pgEvent{ID: id, TypeID: tt["id"].(string)}
}

// pgSession is the url of a new checkout session of one ticket of ev.
func pgSession(t *testing.T, s *service, key string, ev pgEvent) string {
	t.Helper()
	cs := pgAPI(t, s, key, "POST", "/v1/events/"+ev.ID+"/checkout-sessions", map[string]any{
		"items": []map[string]any{{"itemType": "registration_type", "itemId": ev.TypeID, "quantity": 1}},
	})
	return cs["url"].(string)
}

// pgOrderStatus is an order's status as the Developer API says it.
func pgOrderStatus(t *testing.T, s *service, key, eventID, number string) string {
	t.Helper()
	return pgAPI(t, s, key, "GET", "/v1/events/"+eventID+"/orders/"+number, nil)["status"].(string)
}

const cancelButton = `<button type="submit" class="btn" id="cancel-order">`

// TestHostedCancelOfAnUnpaidOrder: the buyer of an order awaiting payment
// (one seat, the only one) cancels it from the order page, behind its
// gate; the page says so in the buyer's language and the next buyer gets
// the seat. A device without the gate, another buyer's order, a garbage
// order number and a second cancel change nothing and are refused as the
// pages refuse (the gate, 404, 412), never a 500.
func TestHostedCancelOfAnUnpaidOrder(t *testing.T) {
	s := pgStart(t)
	u := s.NewUnit("Cancel")
	ev := pgOneSeat(t, s, u.Secret, 25)

	buyer := apptest.NewBrowser(t)
	p := buyer.Post(pgSession(t, s, u.Secret, ev), url.Values{"form": {"checkout"}, "email": {"ana@example.com"}})
	require.Equal(t, 303, p.Status, p.Body)
	require.Contains(t, p.Header.Get("Location"), "/pay/pay_", "a paid order goes to the payment page")
	orders := pgAPI(t, s, u.Secret, "GET", "/v1/events/"+ev.ID+"/orders?email=ana@example.com", nil)["data"].([]any)
	require.Len(t, orders, 1)
	number := orders[0].(map[string]any)["orderNumber"].(string)
	orderURL := s.URL + "/orders/" + number
	require.Equal(t, "awaiting_payment", pgOrderStatus(t, s, u.Secret, ev.ID, number))

	// The seat is held: a second buyer finds it sold out.
	late := apptest.NewBrowser(t)
	require.Equal(t, 412, late.Post(pgSession(t, s, u.Secret, ev), url.Values{"form": {"checkout"}, "email": {"ben@example.com"}}).Status)

	// The order page (this device checked out: no gate) offers the cancel.
	p = buyer.Get(orderURL)
	require.Equal(t, 200, p.Status)
	require.Contains(t, p.Body, "Waiting for payment")
	require.Contains(t, p.Body, `<form method="post" class="stack" action="/orders/`+number+`">`)
	require.Contains(t, p.Body, `<input type="hidden" name="form" value="cancel">`)
	require.Contains(t, p.Body, cancelButton+"Cancel this order</button>")

	// Another device (or a cross-site form: SameSite=Lax sends no cookie
	// with it) meets the gate, and nothing changes.
	other := apptest.NewBrowser(t)
	p = other.Post(orderURL, url.Values{"form": {"cancel"}})
	require.Equal(t, 200, p.Status)
	pgGateForm(t, p, cancelButton)
	// A forged gate cookie is refused the same way.
	p = other.Post(orderURL, url.Values{"form": {"cancel"}}, "Cookie", "ticketd_gate=v1.9999999999.forged")
	require.Equal(t, 403, p.Status)
	pgGateForm(t, p, cancelButton)
	// Garbage and unknown order numbers are the pages' 404.
	require.Equal(t, 404, buyer.Post(s.URL+"/orders/garbage", url.Values{"form": {"cancel"}}).Status)
	require.Equal(t, 404, buyer.Post(s.URL+"/orders/"+number[:len(number)-2]+"ZZ", url.Values{"form": {"cancel"}}).Status)
	require.Equal(t, "awaiting_payment", pgOrderStatus(t, s, u.Secret, ev.ID, number), "refused cancels changed nothing")

	// The buyer cancels: 303 back to the order page, which says so.
	p = buyer.Post(orderURL, url.Values{"form": {"cancel"}})
	require.Equal(t, 303, p.Status, p.Body)
	require.Equal(t, orderURL+"?cancelled=1", p.Header.Get("Location"))
	require.Equal(t, "cancelled", pgOrderStatus(t, s, u.Secret, ev.ID, number))
	p = buyer.Get(orderURL + "?cancelled=1")
	require.Equal(t, 200, p.Status)
	pgRequireSecure(t, p)
	require.Contains(t, p.Body, "Your order has been cancelled and its tickets released.")
	require.NotContains(t, p.Body, cancelButton, "a cancelled order offers no cancel")
	p = buyer.Get(orderURL+"?cancelled=1", "Accept-Language", "zh-CN,zh;q=0.9")
	require.Contains(t, p.Body, "您的订单已取消，门票已释放。")
	// The notice is the cancel's: a plain visit shows the status alone.
	require.NotContains(t, buyer.Get(orderURL).Body, "tickets released")

	// A second (forged) cancel of the cancelled order is refused on its page.
	p = buyer.Post(orderURL, url.Values{"form": {"cancel"}})
	require.Equal(t, 412, p.Status, p.Body)
	require.Contains(t, p.Body, "This order can no longer be cancelled.")
	require.Equal(t, "cancelled", pgOrderStatus(t, s, u.Secret, ev.ID, number))

	// The seat went back on sale: the next buyer gets it and pays.
	p = late.Post(pgSession(t, s, u.Secret, ev), url.Values{"form": {"checkout"}, "email": {"ben@example.com"}})
	require.Equal(t, 303, p.Status, p.Body)
	payURL := p.Header.Get("Location")
	require.Contains(t, payURL, "/pay/pay_")
	require.Equal(t, 303, late.Post(payURL, url.Values{"action": {"pay"}}).Status)
	orders = pgAPI(t, s, u.Secret, "GET", "/v1/events/"+ev.ID+"/orders?email=ben@example.com", nil)["data"].([]any)
	require.Len(t, orders, 1)
	paid := orders[0].(map[string]any)["orderNumber"].(string)
	require.Equal(t, "paid", pgOrderStatus(t, s, u.Secret, ev.ID, paid))

	// A paid order shows no cancel, and a forged one is refused: still paid.
	p = late.Get(s.URL + "/orders/" + paid)
	require.Equal(t, 200, p.Status)
	require.Contains(t, p.Body, "Paid: you are in!")
	require.NotContains(t, p.Body, cancelButton)
	p = late.Post(s.URL+"/orders/"+paid, url.Values{"form": {"cancel"}})
	require.Equal(t, 412, p.Status, p.Body)
	require.Equal(t, "paid", pgOrderStatus(t, s, u.Secret, ev.ID, paid))
	// The first buyer's cookie is no key to the second buyer's order.
	pgGateForm(t, buyer.Post(s.URL+"/orders/"+paid, url.Values{"form": {"cancel"}}), cancelButton)
	require.Equal(t, "paid", pgOrderStatus(t, s, u.Secret, ev.ID, paid))
}

// TestHostedCancelOfTheOpenOrderOffered: a checkout refused because the
// email has an open order (ORDER_ALREADY_OPEN) offers to cancel it, and
// the continue-checkout page of an open order does too; both cancel.
func TestHostedCancelOfTheOpenOrderOffered(t *testing.T) {
	s := pgStart(t)
	u := s.NewUnit("Cancel offered")
	ev := pgPublished(t, s, u.Secret, 25)
	b := apptest.NewBrowser(t)
	require.Equal(t, 303, b.Post(pgSession(t, s, u.Secret, ev), url.Values{"form": {"checkout"}, "email": {"twice@example.com"}}).Status)
	p := b.Post(pgSession(t, s, u.Secret, ev), url.Values{"form": {"checkout"}, "email": {"twice@example.com"}})
	require.Equal(t, 409, p.Status, p.Body)
	orders := pgAPI(t, s, u.Secret, "GET", "/v1/events/"+ev.ID+"/orders?email=twice@example.com", nil)["data"].([]any)
	require.Len(t, orders, 1)
	number := orders[0].(map[string]any)["orderNumber"].(string)
	require.Contains(t, p.Body, `<form method="post" class="stack" action="/orders/`+number+`">`, "the cancel names the open order")
	require.Contains(t, p.Body, cancelButton)
	p = b.Post(s.URL+"/orders/"+number, url.Values{"form": {"cancel"}})
	require.Equal(t, 303, p.Status, p.Body)
	require.Equal(t, "cancelled", pgOrderStatus(t, s, u.Secret, ev.ID, number))
	// With the order given up, the same email checks out again.
	require.Equal(t, 303, b.Post(pgSession(t, s, u.Secret, ev), url.Values{"form": {"checkout"}, "email": {"twice@example.com"}}).Status)

	// An open order's continue page, once past its gate, offers the cancel.
	o := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/orders", map[string]any{
		"email": "kim@example.com", "items": []map[string]any{{"itemType": "registration_type", "itemId": ev.TypeID, "quantity": 1}}})
	open := o["orderNumber"].(string)
	kim := apptest.NewBrowser(t)
	p = kim.Get(o["checkoutUrl"].(string))
	pgGateForm(t, p, cancelButton)
	require.Equal(t, 303, kim.Post(o["checkoutUrl"].(string), url.Values{"form": {"gate"}, "email": {"kim@example.com"}}).Status)
	p = kim.Get(o["checkoutUrl"].(string))
	require.Equal(t, 200, p.Status)
	require.Contains(t, p.Body, `action="/orders/`+open+`"`)
	require.Contains(t, p.Body, cancelButton)
	p = kim.Post(o["orderUrl"].(string), url.Values{"form": {"cancel"}})
	require.Equal(t, 303, p.Status, p.Body)
	require.Equal(t, "cancelled", pgOrderStatus(t, s, u.Secret, ev.ID, open))
	require.True(t, strings.HasSuffix(kim.Get(o["checkoutUrl"].(string)).Header.Get("Location"), "/orders/"+open), "the cancelled order's continue page shows the order")
}
