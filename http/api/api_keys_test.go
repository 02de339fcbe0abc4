package api_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app"
	"ticketd/mail"
	"ticketd/persistence"
	"ticketd/webhooks"
)

// TestStoreHoldsOnlySchemaKeys runs the real service through what writes
// to the store (orders paid through the sandbox's signed webhook, a
// partial refund, ticket and refund mail delivered, retried and parked,
// webhooks delivered and retried, an Idempotency-Key write, the audit log,
// a door device and its scans, the change feed, a restart) and then reads
// every key the Pebble store holds: each must be claimed by exactly one
// entry of persistence.Schema. A new kind of key that is not listed there
// fails it.
func TestStoreHoldsOnlySchemaKeys(t *testing.T) {
	relay, inbox := withMailRelay(t)
	f := newAPIFx(t, relay, func(c *app.Config) {
		c.Tune.Webhooks = func(w *webhooks.Config) {
			w.BackoffMin, w.BackoffMax = time.Hour, time.Hour // a failed delivery stays due
			w.PollInterval, w.Timeout = 10*time.Millisecond, 2*time.Second
		}
		c.Tune.Mail = func(mc *mail.Config) {
			mc.BackoffMin, mc.BackoffMax = 10*time.Millisecond, 50*time.Millisecond
			mc.RetryMin, mc.RetryMax = time.Hour, time.Hour // a refused mail stays due
		}
	})
	inbox.relay.Greylist("later.example.com", true)
	inbox.relay.Reject("never@example.com", true)
	adm := f.admin(t)
	u := f.unit(t)
	rc := newHookReceiver(t, 1)
	ep := apiWant(t, adm.Do("POST", "/admin/v1/business-units/"+u.ID+"/webhook-endpoints", map[string]any{
		"url": rc.srv.URL, "eventTypes": webhooks.HookTypes()}), 201)
	rc.trust(apiS(ep, "secret"))

	ev := apiPublished(t, u.dev)
	s := apiShop{c: u.dev, ev: ev, tt: apiOpenType(t, u.dev, ev, map[string]any{"priceAmount": 40})}
	o := apiPaid(t, f, s, "keys@example.com", "40")
	apiWant(t, adm.Do("POST", s.refundPath(apiS(o, "orderNumber")), map[string]any{"amount": 15}), 200)
	apiPaid(t, f, s, "someone@later.example.com", "40")
	apiPaid(t, f, s, "never@example.com", "40")
	apiWant(t, u.dev.WithHeader("Idempotency-Key", "keys-1").Do("POST", s.path("/orders"),
		map[string]any{"email": "idem@example.com", "items": apiTicket(s.tt)}), 201)

	x := newDoorFx(t, f)
	scans(t, x.dev, scanOf("k1", x.regs[0], nil), scanOf("k2", x.regs[1], nil))
	feedAll(t, x.u.dev, x.eventID, "", 100)

	inbox.next(t, "keys@example.com")
	store := f.s.Sys.Store()
	has := func(prefix string) bool {
		found := false
		err := store.Scan([]byte(prefix), func(_, _ []byte) error { found = true; return errStop })
		if err != errStop {
			require.NoError(t, err)
		}
		return found
	}
	// Not vacuous: the run wrote every kind of owed work and index the
	// test is about, each under its schema prefix (mail leaves its inbox
	// once tried: delivered, retrying or parked).
	for _, p := range []string{persistence.PrefixEventIndex, persistence.PrefixEventPublished, persistence.PrefixFeed,
		persistence.PrefixMailByOrder, persistence.PrefixOutbox + mail.QueueName + "/",
		persistence.PrefixOutbox + webhooks.TaskQueue + "/", persistence.PrefixHookEndpoint, persistence.PrefixHookLog,
		persistence.PrefixIdempotency, persistence.PrefixAudit} {
		require.Eventuallyf(t, func() bool { return has(p) }, 10*time.Second, 20*time.Millisecond, "no key under %q", p)
	}
	require.NoError(t, store.CheckSchema(20))

	f.s.Restart()
	require.NoError(t, f.s.Sys.Store().CheckSchema(20), "after a restart")
}

var errStop = fmt.Errorf("stop")
