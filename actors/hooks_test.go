package actors

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/event"
	"ticketd/webhooks"
)

func TestWebhookEventsAreWrittenWithTheChange(t *testing.T) {
	woke := make(chan struct{}, 10)
	e := newEnv(t, func(c *Config) { c.OnOwed = func() { woke <- struct{}{} } })
	evt, tt := e.newEvent("bu_1", nil)
	res, err := e.sys.Ask(bg, evt, event.CreateRegistration{Email: "m@example.com", RegistrationTypeID: tt})
	require.NoError(t, err)
	reg := res.(event.RegistrationResult)
	_, err = e.sys.Ask(bg, evt, event.CancelRegistration{ID: reg.ID})
	require.NoError(t, err)
	select {
	case <-woke:
	case <-time.After(5 * time.Second):
		t.Fatal("the deliverer was not woken")
	}
	e.reopen()
	var got []webhooks.HookEvent
	require.NoError(t, e.store.Scan([]byte(webhooks.InboxPrefix), func(k, v []byte) error {
		var h webhooks.HookEvent
		require.NoError(t, json.Unmarshal(v, &h))
		got = append(got, h)
		return nil
	}))
	require.Len(t, got, 3)
	types := []string{got[0].Type, got[1].Type, got[2].Type}
	assert.Equal(t, []string{webhooks.HookRegistrationCreated, webhooks.HookRegistrationConfirmed, webhooks.HookRegistrationCancelled}, types)
	ids := map[string]bool{}
	for _, h := range got {
		assert.Equal(t, "bu_1", h.UnitID)
		assert.Equal(t, evt, h.EventID)
		ids[h.ID] = true
		var r event.Registration
		require.NoError(t, json.Unmarshal(h.Data, &r))
		assert.Equal(t, reg.ID, r.ID)
	}
	assert.Len(t, ids, 3, "every webhook event has its own id")
}

func TestWebhookEventsOnlyForSubscribedTypes(t *testing.T) {
	var asked []string
	e := newEnv(t, func(c *Config) {
		c.Owed = owedWith(webhooks.Owed{Want: func(unit, typ string) bool {
			asked = append(asked, unit+" "+typ) // called from the actor only
			return typ == webhooks.HookRegistrationCancelled
		}})
	})
	evt, tt := e.newEvent("bu_1", nil)
	res, err := e.sys.Ask(bg, evt, event.CreateRegistration{Email: "m@example.com", RegistrationTypeID: tt})
	require.NoError(t, err)
	reg := res.(event.RegistrationResult)
	_, err = e.sys.Ask(bg, evt, event.RecordCheckin{RegistrationID: reg.ID, SubjectType: "event"})
	require.NoError(t, err)
	_, err = e.sys.Ask(bg, evt, event.CancelRegistration{ID: reg.ID})
	require.NoError(t, err)
	e.reopen()
	var got []string
	require.NoError(t, e.store.Scan([]byte(webhooks.InboxPrefix), func(k, v []byte) error {
		var h webhooks.HookEvent
		require.NoError(t, json.Unmarshal(v, &h))
		got = append(got, h.Type)
		return nil
	}))
	assert.Equal(t, []string{webhooks.HookRegistrationCancelled}, got, "unsubscribed types are neither queued nor written")
	assert.Contains(t, asked, "bu_1 "+webhooks.HookCheckinCreated)
}
