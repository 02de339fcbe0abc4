package cluster_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app"
	clusternode "ticketd/cluster/node"
	"ticketd/mail"
)

// TestMailOncePerEvent: three nodes share one SMTP relay. A ticket mail
// is sent once, by the event's owner (not once per node); a mail the
// owner could not deliver yet (its domain greylisted) is sent, once, by
// the survivor that takes the event over when the owner is stopped, and
// the mail the lost owner had delivered is not sent again.
func TestMailOncePerEvent(t *testing.T) {
	t.Parallel() // see parallelTests
	mailOncePerEvent(t, 0)
}

// TestMailOnceBeyondActivation: the same with a survivor that activates
// none of a gained shard's events at once (as one beyond
// TICKETD's 10,000 per shard): the event's first request after the loss
// claims it there, and that claim imports the mail it owes.
func TestMailOnceBeyondActivation(t *testing.T) {
	t.Parallel() // see parallelTests
	mailOncePerEvent(t, -1)
}

func mailOncePerEvent(t *testing.T, activateMax int) {
	relay, box := startRelay(t)
	count := box.to
	relay.Greylist("later.example", true)

	nodes := startNodes(t, 3, func(c *app.Config) {
		c.SMTPAddr = relay.Addr
		c.Tune = &app.Tuning{Mail: func(mc *mail.Config) {
			mc.RetryMin, mc.RetryMax = 200*time.Millisecond, 500*time.Millisecond
			mc.BackoffMin, mc.BackoffMax = 100*time.Millisecond, 500*time.Millisecond
		}, Cluster: func(cc *clusternode.Config) { cc.ActivateMax = activateMax }}
	})
	a := nodes[0]
	u := a.NewUnit("Mail")
	var evt, owner string
	for range 20 {
		st, ev := do(t, "POST", a.URL+"/v1/events", u.Secret, map[string]any{"name": "Drop", "timezone": "UTC", "startsAt": "2030-06-01T09:00:00Z"})
		require.Equal(t, 201, st, "%v", ev)
		evt = ev["id"].(string)
		if owner = ownerOf(t, a, evt); owner != "" && owner != a.name {
			break
		}
	}
	require.NotEqual(t, a.name, owner)
	var b *node
	for _, nd := range nodes {
		if nd.name == owner {
			b = nd
		}
	}
	st, tt := do(t, "POST", a.URL+"/v1/events/"+evt+"/ticket-types", u.Secret, map[string]any{"name": "GA", "capacity": 10, "priceAmount": 0})
	require.Equal(t, 201, st, "%v", tt)
	typeID := tt["id"].(string)
	st, _ = do(t, "PATCH", a.URL+"/v1/events/"+evt+"/ticket-types/"+typeID, u.Secret, map[string]any{"status": "open"})
	require.Equal(t, 200, st)
	st, _ = do(t, "PATCH", a.URL+"/v1/events/"+evt, u.Secret, map[string]any{"status": "published"})
	require.Equal(t, 200, st)
	order := func(email string) {
		st, o := do(t, "POST", a.URL+"/v1/events/"+evt+"/orders", u.Secret, map[string]any{"email": email,
			"items": []map[string]any{{"itemType": "registration_type", "itemId": typeID, "quantity": 1}}})
		require.Equal(t, 201, st, "%v", o)
		// A free order is fulfilled (its tickets issued, mail owed) once
		// confirmed.
		st, o = do(t, "POST", a.URL+"/v1/events/"+evt+"/orders/"+o["orderNumber"].(string)+"/confirm", u.Secret, map[string]any{})
		require.Equal(t, 200, st, "%v", o)
	}

	order("first@example.com")
	eventually(t, 20*time.Second, "the first ticket mail delivered", func() bool { return count("first@example.com") > 0 })
	order("second@later.example")
	eventually(t, 20*time.Second, "the owner tried the second mail", func() bool { return len(relay.Tries("second@later.example")) > 0 })
	// The owner's senders settle what they delivered within a second.
	time.Sleep(1500 * time.Millisecond)
	require.Equal(t, 1, count("first@example.com"), "sent by the owner alone")

	require.NoError(t, b.Main.Close())
	eventually(t, 60*time.Second, "a survivor owns the event", func() bool {
		o := ownerOf(t, a, evt)
		return o != "" && o != b.name
	})
	// The event's first request since: on the new owner, it activates the
	// event if the shard's gain did not.
	st, _ = retry503(t, func() (int, map[string]any) { return do(t, "GET", a.URL+"/v1/events/"+evt, u.Secret, nil) })
	require.Equal(t, 200, st)
	relay.Greylist("later.example", false)
	eventually(t, 60*time.Second, "the second mail delivered by the new owner", func() bool { return count("second@later.example") > 0 })
	time.Sleep(3 * time.Second)
	require.Equal(t, 1, count("second@later.example"), "the pending mail sent once")
	require.Equal(t, 1, count("first@example.com"), "the delivered mail not sent again")
}
