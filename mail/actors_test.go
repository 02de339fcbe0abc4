package mail

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/event"
	"ticketd/persistence"
	"ticketd/snapshots"
)

// TestTicketEmailOfARealRegistration wires the mailer as the service does:
// an event actor writes the mail inbox entry with the change that owes it and
// wakes the mailer, which delivers the email with the registration's pass
// link and empties the inbox.
func TestTicketEmailOfARealRegistration(t *testing.T) {
	m, sys, _, got := mailerWithEvents(t)
	m.Start()

	ctx := context.Background()
	id := sys.NewEventID()
	_, err := sys.CreateEvent(ctx, "bu_1", id, event.CreateEvent{Name: "Gopher Night", Timezone: "UTC"})
	require.NoError(t, err)
	res, err := sys.Ask(ctx, id, event.CreateTicketType{Name: "Standing"})
	require.NoError(t, err)
	tt := res.(event.TicketType).ID
	_, err = sys.Ask(ctx, id, event.UpdateTicketType{ID: tt, Status: event.Some("open")})
	require.NoError(t, err)
	res, err = sys.Ask(ctx, id, event.CreateRegistration{Email: "rob@example.com", Name: "Rob", RegistrationTypeID: tt})
	require.NoError(t, err)
	reg := res.(event.RegistrationResult)

	select {
	case r := <-got:
		require.Equal(t, []string{"rob@example.com"}, r.to)
		_, p := parts(t, r.data)
		require.Contains(t, p["text/plain"], reg.PassURL)
		require.Contains(t, p["text/plain"], "Standing")
		require.Contains(t, p["text/plain"], "Gopher Night")
		require.Contains(t, p["text/html"], `href="`+reg.PassURL+`"`)
	case <-time.After(5 * time.Second):
		t.Fatal("the ticket email did not arrive")
	}
	waitPending(t, m, 0)
}

// mailerWithEvents wires a mailer (not started) to an actor system on one
// Pebble store in a temp dir, as the service does: event actors write the
// mail inbox entries with the changes that owe them and wake the mailer, which
// delivers to the returned SMTP listener's channel.
func mailerWithEvents(t *testing.T) (*Mailer, *actors.System, *persistence.Store, chan received) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	got := startSMTP(t, ln)
	store, err := persistence.Open(persistence.Options{Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	m, err := New(Config{SMTPAddr: ln.Addr().String(), BackoffMin: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond}, store)
	require.NoError(t, err)
	sys, err := actors.Open(actors.Config{
		Event: event.Config{BaseURL: "https://tickets.example.com", OrderHold: 15 * time.Minute, CheckoutSessionTTL: time.Hour},
		Owed:  []actors.OwedWork{Owed{}}, Links: Owed{},
		OnOwed: m.Wake, Logger: slog.New(slog.DiscardHandler),
	}, store, snapshots.New(store, 2))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = m.Close()
		_ = sys.Close()
		_ = store.Close()
	})
	return m, sys, store, got
}
