package api_test

// Black-box test of the mail outbox listing and the retry of parked mail,
// with the service's mailer delivering to a real SMTP server on loopback.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app"
	"ticketd/app/apptest"
	"ticketd/mail"
	"ticketd/mail/smtptest"
)

func TestAPIOutboxParkedMailListedAndRetried(t *testing.T) {
	t.Parallel()
	relay, err := smtptest.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = relay.Close() })
	relay.Reject("nobody@example.com", true)

	s := startService(t, func(c *app.Config) {
		c.SMTPAddr = relay.Addr
		c.Tune = &app.Tuning{Mail: func(mc *mail.Config) {
			mc.BackoffMin, mc.BackoffMax = 10*time.Millisecond, 50*time.Millisecond
		}}
	})
	f := &apiFx{s: s}
	u := f.unit(t)
	adm := f.admin(t)

	ev := apiPublished(t, u.dev)
	tt := apiOpenType(t, u.dev, ev, nil)
	apiRegister(t, u.dev, ev, tt, "nobody@example.com")
	apiRegister(t, u.dev, ev, tt, "ada@example.com")
	select {
	case msg := <-relay.Delivered():
		require.Equal(t, []string{"ada@example.com"}, msg.To, "the refused address held up the other")
	case <-time.After(5 * time.Second):
		t.Fatal("the deliverable mail did not go out")
	}

	var parked map[string]any
	require.Eventually(t, func() bool {
		items := apiData(t, apiWant(t, adm.Do("GET", "/admin/v1/outbox", nil), 200))
		if len(items) != 1 || items[0]["status"] != "parked" {
			return false
		}
		parked = items[0]
		return true
	}, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, "nobody@example.com", parked["email"])
	require.Contains(t, parked["lastError"], "550")
	require.EqualValues(t, 1, parked["attempts"])
	require.NotNil(t, parked["lastAttemptAt"])
	require.Nil(t, parked["nextAttemptAt"])

	id := apiS(parked, "id")
	apiWantErr(t, adm.Do("POST", "/admin/v1/outbox/evt_nope.0000000000000001-0000/retry", nil), 404, "NOT_FOUND")
	relay.Reject("nobody@example.com", false)
	got := apiWant(t, adm.Do("POST", "/admin/v1/outbox/"+id+"/retry", nil), 200)
	require.Equal(t, "retrying", got["status"])
	select {
	case msg := <-relay.Delivered():
		require.Equal(t, []string{"nobody@example.com"}, msg.To)
	case <-time.After(5 * time.Second):
		t.Fatal("the retried mail did not go out")
	}
	require.Eventually(t, func() bool {
		return len(apiData(t, apiWant(t, adm.Do("GET", "/admin/v1/outbox", nil), 200))) == 0
	}, 5*time.Second, 20*time.Millisecond)
	apiWantErr(t, adm.Do("POST", "/admin/v1/outbox/"+id+"/retry", nil), 404, "NOT_FOUND")
}

// TestAPIOutboxKeyedRetryLostAnswerReplayed: a keyed retry of parked mail
// whose answer is lost (the crash hook drops the pipeline's store of it,
// as a kill -9 between the requeue and the answer would) and the service
// restarted, then sent again with the same key, replays the first answer
// and requeues nothing more: the mail is tried once for that retry, not
// twice (issue 31 item 3; decisions §20). Before the record committed
// with the requeue, the second request requeued the entry again (a third
// attempt) and answered a new body.
func TestAPIOutboxKeyedRetryLostAnswerReplayed(t *testing.T) {
	t.Parallel()
	relay, err := smtptest.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = relay.Close() })
	const to = "bounce@example.com"
	relay.Reject(to, true)

	lost := &apptest.Lost{}
	s := startService(t, func(c *app.Config) {
		c.SMTPAddr = relay.Addr
		c.Tune = &app.Tuning{Mail: func(mc *mail.Config) {
			mc.BackoffMin, mc.BackoffMax = 10*time.Millisecond, 50*time.Millisecond
		}}
	}, apptest.LoseAnswers("lost-", lost))
	f := &apiFx{s: s}
	u := f.unit(t)
	ev := apiPublished(t, u.dev)
	tt := apiOpenType(t, u.dev, ev, nil)
	apiRegister(t, u.dev, ev, tt, to)

	parkedWith := func(attempts int) map[string]any {
		t.Helper()
		var parked map[string]any
		require.Eventually(t, func() bool {
			items := apiData(t, apiWant(t, f.admin(t).Do("GET", "/admin/v1/outbox", nil), 200))
			if len(items) != 1 || items[0]["status"] != "parked" || items[0]["attempts"] != float64(attempts) {
				return false
			}
			parked = items[0]
			return true
		}, 10*time.Second, 20*time.Millisecond)
		return parked
	}
	id := apiS(parkedWith(1), "id")

	keyed := func() *apiResp {
		return f.admin(t).WithHeader("Idempotency-Key", "lost-retry-1").Do("POST", "/admin/v1/outbox/"+id+"/retry", nil)
	}
	first := keyed()
	require.Equal(t, 200, first.Status, "%s", first.Body)
	require.Equal(t, []string{"lost-retry-1"}, lost.Keys(), "the crash hook dropped the answer")
	// The requeued mail is tried once more, refused, and parked again.
	parkedWith(2)
	require.Len(t, relay.Tries(to), 2)

	s.Restart()
	again := keyed()
	require.Equal(t, 200, again.Status, "%s", again.Body)
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"), "the retry ran the requeue again: %s", again.Body)
	require.JSONEq(t, string(first.Body), string(again.Body))
	require.Equal(t, "retrying", apiWant(t, again, 200)["status"])

	// Nothing was requeued by the retry: the entry stays parked after its
	// second attempt, and the relay saw no third.
	time.Sleep(300 * time.Millisecond)
	parkedWith(2)
	require.Len(t, relay.Tries(to), 2)
}
