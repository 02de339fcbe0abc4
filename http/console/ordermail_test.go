package console_test

import (
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app"
	"ticketd/app/apptest"
	"ticketd/mail/smtptest"
)

var mailLinkRE = regexp.MustCompile(`href="(/console/events/[^"]+/emails/[^"/]+)">(\w+)</a>`)

// waitMail waits for n messages at the relay.
func waitMail(t *testing.T, relay *smtptest.Relay, n int) {
	t.Helper()
	for range n {
		select {
		case <-relay.Delivered():
		case <-time.After(10 * time.Second):
			t.Fatal("the email did not arrive")
		}
	}
}

// TestOrderPageListsItsEmails: a paid order's page lists its ticket email,
// sent through the relay, with its preview (as it was sent, and its HTML
// part in a sandbox); the refund adds the refund email; another order's
// email is not found under this order.
func TestOrderPageListsItsEmails(t *testing.T) {
	relay, err := smtptest.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = relay.Close() })
	s := apptest.Start(t, func(c *app.Config) { c.SMTPAddr = relay.Addr })
	op := operator(t, s)
	unit := op.newUnit("Mail Unit")
	ev := op.newEvent(unit, "Recital")
	require.Equal(t, 303, op.post("/console/events/"+ev+"/publish").Status)
	tt := match(t, typeRE, op.get("/console/events/"+ev).Body)
	key := op.secretKey(unit)
	num := sell(t, s, key, ev, tt, "bea@example.com", "Bea Buyer")
	waitMail(t, relay, 1)

	var p apptest.Page
	require.Eventually(t, func() bool {
		p = op.get("/console/events/" + ev + "/orders/" + num)
		return regexp.MustCompile(`badge mail-sent">sent<`).MatchString(p.Body)
	}, 10*time.Second, 20*time.Millisecond, "the ticket email shows as sent")
	require.Equal(t, 200, p.Status)
	links := mailLinkRE.FindAllStringSubmatch(p.Body, -1)
	require.Len(t, links, 1, p.Body)
	assert.Equal(t, "ticket", links[0][2])
	assert.Contains(t, p.Body, `<td class="mono" data-label="To">bea@example.com</td>`)

	pv := op.get(links[0][1])
	require.Equal(t, 200, pv.Status, pv.Body)
	assert.Contains(t, pv.Body, `<span class="badge" id="mail-state">sent</span>`)
	assert.Contains(t, pv.Body, "As it was sent")
	assert.Contains(t, pv.Body, num, "the text names the order")
	assert.Contains(t, pv.Body, "event.ics")
	h := op.get(links[0][1] + "/html")
	require.Equal(t, 200, h.Status)
	assert.Contains(t, h.Header.Get("Content-Security-Policy"), "sandbox")
	assert.Contains(t, h.Body, num)

	require.Equal(t, 303, op.post("/console/events/"+ev+"/orders/"+num+"/refund", "reason", "asked").Status)
	waitMail(t, relay, 1)
	require.Eventually(t, func() bool {
		p = op.get("/console/events/" + ev + "/orders/" + num)
		links = mailLinkRE.FindAllStringSubmatch(p.Body, -1)
		return len(links) == 2 && len(regexp.MustCompile(`badge mail-sent">sent<`).FindAllString(p.Body, -1)) == 2
	}, 10*time.Second, 20*time.Millisecond, "the refund email shows")
	assert.Equal(t, "ticket", links[0][2])
	assert.Equal(t, "refund", links[1][2])

	// An email of another order is not this order's.
	num2 := sell(t, s, key, ev, tt, "cy@example.com", "Cy")
	waitMail(t, relay, 1)
	require.Eventually(t, func() bool {
		return len(mailLinkRE.FindAllStringSubmatch(op.get("/console/events/"+ev+"/orders/"+num2).Body, -1)) == 1
	}, 10*time.Second, 20*time.Millisecond)
	other := mailLinkRE.FindAllStringSubmatch(op.get("/console/events/"+ev+"/orders/"+num2).Body, -1)[0][1]
	ref := other[len("/console/events/"+ev+"/orders/"+num2+"/emails/"):]
	assert.Equal(t, 404, op.get("/console/events/"+ev+"/orders/"+num+"/emails/"+ref).Status)
	assert.Equal(t, 404, op.get("/console/events/"+ev+"/orders/"+num+"/emails/nonsense").Status)
}

// An order whose mail has not gone out yet (no relay) lists it as queued,
// and its preview says how it will be sent.
func TestOrderPageListsQueuedEmails(t *testing.T) {
	s := apptest.Start(t)
	op := operator(t, s)
	unit := op.newUnit("Queue Unit")
	ev := op.newEvent(unit, "Matinee")
	require.Equal(t, 303, op.post("/console/events/"+ev+"/publish").Status)
	tt := match(t, typeRE, op.get("/console/events/"+ev).Body)
	num := sell(t, s, op.secretKey(unit), ev, tt, "dee@example.com", "Dee")
	p := op.get("/console/events/" + ev + "/orders/" + num)
	require.Equal(t, 200, p.Status)
	links := mailLinkRE.FindAllStringSubmatch(p.Body, -1)
	require.Len(t, links, 1, p.Body)
	assert.Contains(t, p.Body, `badge mail-pending">pending<`)
	pv := op.get(links[0][1])
	require.Equal(t, 200, pv.Status)
	assert.Contains(t, pv.Body, "As it will be sent")

	// Money reads the same in the console and on the buyer's hosted
	// order page: one formatter.
	assert.Contains(t, p.Body, "<td class=\"num total\">25,00\u00a0€</td>")
	buyer, orderURL := apptest.NewBrowser(t), match(t, regexp.MustCompile(`<dt>Order page</dt><dd><a href="([^"]+)"`), p.Body)
	hosted := buyer.Post(orderURL, url.Values{"form": {"gate"}, "email": {"dee@example.com"}})
	if hosted.Status == 303 {
		hosted = buyer.Get(orderURL)
	}
	require.Equal(t, 200, hosted.Status, hosted.Body)
	assert.Contains(t, hosted.Body, "25,00\u00a0€")
}
