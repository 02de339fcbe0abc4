package console_test

import (
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app"
	"ticketd/app/apptest"
	"ticketd/audit"
	"ticketd/mail"
	"ticketd/mail/smtptest"
	"ticketd/webhooks"
)

// auditOps lists the unit's audit entries as "operation by actor type".
func auditOps(t *testing.T, s *apptest.Service, unit string) []string {
	t.Helper()
	log := s.Main.Audit()
	require.NoError(t, log.Flush())
	entries, _, err := log.List(unit, audit.Filter{}, "", 100)
	require.NoError(t, err)
	var ops []string
	for _, e := range entries {
		ops = append(ops, e.OperationID+" by "+e.ActorType)
	}
	return ops
}

// nextMail waits for the relay's next message to address.
func nextMail(t *testing.T, relay *smtptest.Relay, address string) smtptest.Message {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-relay.Delivered():
			if strings.Contains(strings.Join(m.To, ","), address) {
				return m
			}
		case <-deadline:
			t.Fatalf("no email to %s arrived", address)
		}
	}
}

var resendTicketRE = regexp.MustCompile(`/registrations/(reg_[A-Za-z0-9]+)/resend-ticket`)

// TestResendTicketEmailOverSMTP: an organizer sends an attendee's ticket
// email again from the attendees page; it reaches a real SMTP relay
// through the durable outbox, is audited with who asked, a viewer may not
// ask, and a cancelled registration has no ticket to send.
func TestResendTicketEmailOverSMTP(t *testing.T) {
	relay, err := smtptest.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = relay.Close() })
	s := apptest.Start(t, func(c *app.Config) {
		c.SMTPAddr = relay.Addr
		c.Tune = &app.Tuning{Mail: func(mc *mail.Config) { mc.BackoffMin, mc.BackoffMax = 10*time.Millisecond, 50*time.Millisecond }}
	})
	op := operator(t, s)
	unit := op.newUnit("Resend Unit")
	ev := op.newEvent(unit, "Resend Night")
	require.Equal(t, 303, op.post("/console/events/"+ev+"/publish").Status)
	tt := match(t, typeRE, op.get("/console/events/"+ev).Body)
	key := op.secretKey(unit)
	sell(t, s, key, ev, tt, "ann@example.com", "Ann Attendee")
	first := nextMail(t, relay, "ann@example.com")

	p := op.get("/console/events/" + ev + "/attendees")
	require.Equal(t, 200, p.Status)
	reg := match(t, resendTicketRE, p.Body)
	assert.Contains(t, p.Body, `aria-label="Resend the ticket email to ann@example.com"`)

	viewer := accept(t, op.invite(unit, "viewer@example.com", "viewer"), "Vic Viewer", "viewer password")
	viewer.get("/console/events/" + ev + "/attendees")
	assert.Equal(t, 403, viewer.post("/console/events/"+ev+"/registrations/"+reg+"/resend-ticket").Status)
	assert.Equal(t, 403, op.b.Post(s.URL+"/console/events/"+ev+"/registrations/"+reg+"/resend-ticket", nil).Status, "no CSRF token")

	p = op.post("/console/events/"+ev+"/registrations/"+reg+"/resend-ticket", "status", "confirmed")
	require.Equal(t, 303, p.Status, p.Body)
	assert.Equal(t, "/console/events/"+ev+"/attendees?resent=1&status=confirmed", p.Header.Get("Location"))
	assert.Contains(t, op.get(p.Header.Get("Location")).Body, "The ticket email is queued again")
	again := nextMail(t, relay, "ann@example.com")
	subject := regexp.MustCompile(`(?m)^Subject: (.*)\r?$`)
	require.NotNil(t, subject.FindSubmatch(again.Data))
	assert.Equal(t, string(subject.FindSubmatch(first.Data)[1]), string(subject.FindSubmatch(again.Data)[1]), "the same ticket email")
	assert.Contains(t, auditOps(t, s, unit), "console.resendTicketEmail by admin")

	// Cancelled: refused on the page, nothing sent.
	require.Equal(t, 303, op.post("/console/events/"+ev+"/registrations/"+reg+"/cancel").Status)
	cancelled := nextMail(t, relay, "ann@example.com") // the cancellation notice
	assert.NotEqual(t, string(subject.FindSubmatch(first.Data)[1]), string(subject.FindSubmatch(cancelled.Data)[1]))
	p = op.post("/console/events/" + ev + "/registrations/" + reg + "/resend-ticket")
	require.Equal(t, 303, p.Status)
	assert.Contains(t, p.Header.Get("Location"), "error=")
	p = op.get(p.Header.Get("Location"))
	assert.Contains(t, p.Body, "only a confirmed registration has a ticket")
	select {
	case m := <-relay.Delivered():
		t.Fatalf("unexpected mail to %v", m.To)
	case <-time.After(200 * time.Millisecond):
	}
}

// hookSink is a real webhook receiver on a loopback port.
type hookSink struct {
	mu     sync.Mutex
	bodies []string
	srv    *httptest.Server
}

func newHookSink(t *testing.T) *hookSink {
	h := &hookSink{}
	h.srv = httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.bodies = append(h.bodies, string(b))
		h.mu.Unlock()
		w.WriteHeader(204)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookSink) got() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.bodies...)
}

var resendHookRE = regexp.MustCompile(`/deliveries/([0-9a-f]{16}-[0-9a-f]{8})/resend`)

// TestResendWebhookDeliveryInConsole: "Resend" in an endpoint's delivery
// log sends the same body again to a real receiver and logs the new
// attempt; it is audited, refused without the CSRF token or for another
// unit, and refused on the page while the endpoint is disabled.
func TestResendWebhookDeliveryInConsole(t *testing.T) {
	s := apptest.Start(t, func(c *app.Config) {
		c.Tune = &app.Tuning{Webhooks: func(w *webhooks.Config) {
			w.BackoffMin, w.BackoffMax = 10*time.Millisecond, 40*time.Millisecond
			w.PollInterval, w.Timeout = 10*time.Millisecond, 2*time.Second
		}}
	})
	sink := newHookSink(t)
	op := operator(t, s)
	unit, other := op.newUnit("Hooks Unit"), op.newUnit("Other Unit")
	op.get("/console/units/" + unit + "/webhooks")
	p := op.post("/console/units/"+unit+"/webhooks", "url", sink.srv.URL, "eventTypes", "registration.created")
	require.Equal(t, 201, p.Status, p.Body)
	ep := match(t, regexp.MustCompile(`\?deliveries=([A-Za-z0-9_]+)"`), p.Body)

	ev := op.newEvent(unit, "Hooked")
	require.Equal(t, 303, op.post("/console/events/"+ev+"/publish").Status)
	tt := match(t, typeRE, op.get("/console/events/"+ev).Body)
	sell(t, s, op.secretKey(unit), ev, tt, "hook@example.com", "Hu Hook")
	logPage := "/console/units/" + unit + "/webhooks?deliveries=" + ep
	require.Eventually(t, func() bool { return resendHookRE.MatchString(op.get(logPage).Body) }, 10*time.Second, 20*time.Millisecond)
	delivery := match(t, resendHookRE, op.get(logPage).Body)
	require.Len(t, sink.got(), 1)
	resend := "/console/units/" + unit + "/webhooks/" + ep + "/deliveries/" + delivery + "/resend"

	assert.Equal(t, 403, op.b.Post(s.URL+resend, nil).Status, "no CSRF token")
	assert.Equal(t, 404, op.post(strings.Replace(resend, unit, other, 1)).Status, "another unit's endpoint")
	assert.Equal(t, 404, op.post(strings.Replace(resend, delivery, "0000000000000000-00000000", 1)).Status)

	p = op.post(resend)
	require.Equal(t, 303, p.Status, p.Body)
	require.Eventually(t, func() bool { return len(sink.got()) == 2 }, 10*time.Second, 10*time.Millisecond)
	got := sink.got()
	assert.Equal(t, got[0], got[1], "the same body, event id included")
	p = op.get(p.Header.Get("Location"))
	assert.Contains(t, p.Body, "The delivery is queued again")
	require.Eventually(t, func() bool { return len(resendHookRE.FindAllString(op.get(logPage).Body, -1)) == 2 }, 10*time.Second, 20*time.Millisecond)
	assert.Contains(t, auditOps(t, s, unit), "console.resendWebhookDelivery by admin")

	require.Equal(t, 303, op.post("/console/units/"+unit+"/webhooks/"+ep+"/disable").Status)
	p = op.post(resend)
	assert.Equal(t, 409, p.Status)
	assert.Contains(t, p.Body, "The endpoint is disabled: enable it, then resend.")
	time.Sleep(50 * time.Millisecond)
	assert.Len(t, sink.got(), 2)
}

var hookSeqRE = regexp.MustCompile(`"seq":(\d+)`)

// TestReplayWebhooksInConsole: the webhook page's Replay form sends the
// logged webhooks again from a change feed seq of one event, or from a
// time, to a real receiver: each once, oldest first, the same bodies;
// bad input is refused on the page and nothing is sent.
func TestReplayWebhooksInConsole(t *testing.T) {
	s := apptest.Start(t, func(c *app.Config) {
		c.Tune = &app.Tuning{Webhooks: func(w *webhooks.Config) {
			w.BackoffMin, w.BackoffMax = 10*time.Millisecond, 40*time.Millisecond
			w.PollInterval, w.Timeout = 10*time.Millisecond, 2*time.Second
		}}
	})
	sink := newHookSink(t)
	op := operator(t, s)
	unit := op.newUnit("Replay Unit")
	op.get("/console/units/" + unit + "/webhooks")
	p := op.post("/console/units/"+unit+"/webhooks", "url", sink.srv.URL, "eventTypes", "registration.created")
	require.Equal(t, 201, p.Status, p.Body)
	ep := match(t, regexp.MustCompile(`\?deliveries=([A-Za-z0-9_]+)"`), p.Body)
	ev := op.newEvent(unit, "Replayed")
	require.Equal(t, 303, op.post("/console/events/"+ev+"/publish").Status)
	tt := match(t, typeRE, op.get("/console/events/"+ev).Body)
	key := op.secretKey(unit)
	for _, email := range []string{"r1@example.com", "r2@example.com", "r3@example.com"} {
		sell(t, s, key, ev, tt, email, "R")
	}
	require.Eventually(t, func() bool { return len(sink.got()) == 3 }, 10*time.Second, 10*time.Millisecond)
	first := sink.got()
	seqs := make([]string, 3)
	for i, b := range first {
		seqs[i] = hookSeqRE.FindStringSubmatch(b)[1]
	}
	logPage := "/console/units/" + unit + "/webhooks?deliveries=" + ep
	assert.Contains(t, op.get(logPage).Body, `id="replay"`)
	replay := "/console/units/" + unit + "/webhooks/" + ep + "/replay"

	p = op.post(replay, "eventId", ev, "fromSeq", seqs[1])
	require.Equal(t, 303, p.Status, p.Body)
	assert.Contains(t, op.get(p.Header.Get("Location")).Body, "Replay queued: 2 webhook events")
	require.Eventually(t, func() bool { return len(sink.got()) == 5 }, 10*time.Second, 10*time.Millisecond)
	got := sink.got()
	assert.Equal(t, first[1:], got[3:], "from the seq on, oldest first, the same bodies")

	p = op.post(replay, "since", "2000-01-01T00:00")
	require.Equal(t, 303, p.Status, p.Body)
	require.Eventually(t, func() bool { return len(sink.got()) == 8 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, first, sink.got()[5:])
	assert.Contains(t, auditOps(t, s, unit), "console.replayWebhookDeliveries by admin")

	for _, bad := range [][]string{{"fromSeq", "2"}, {"fromSeq", "x", "eventId", ev}, {"since", "yesterday"}, {}} {
		p = op.post(replay, bad...)
		assert.Equal(t, 400, p.Status, "%v", bad)
	}
	assert.Equal(t, 403, op.b.Post(s.URL+replay, nil).Status, "no CSRF token")
	time.Sleep(50 * time.Millisecond)
	assert.Len(t, sink.got(), 8, "nothing else was sent")
}
