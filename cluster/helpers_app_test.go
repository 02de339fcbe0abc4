package cluster_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"ticketd/mail/smtptest"
)

// mailbox counts the mails a test relay delivered, per recipient.
type mailbox struct {
	mu  sync.Mutex
	got map[string]int
}

// startRelay starts an SMTP relay on loopback, closed when t ends, and
// counts what it delivers.
func startRelay(t *testing.T) (*smtptest.Relay, *mailbox) {
	t.Helper()
	relay, err := smtptest.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = relay.Close() })
	box := &mailbox{got: map[string]int{}}
	go func() {
		for m := range relay.Delivered() {
			box.mu.Lock()
			for _, to := range m.To {
				box.got[to]++
			}
			box.mu.Unlock()
		}
	}()
	return relay, box
}

// to is how many mails addr was sent.
func (b *mailbox) to(addr string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.got[addr]
}

// recipients is how many addresses were sent a mail.
func (b *mailbox) recipients() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.got)
}

// domain is how many mails went to addresses at domain, and the most any
// one of them was sent.
func (b *mailbox) domain(domain string) (n, most int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for to, c := range b.got {
		if strings.HasSuffix(to, "@"+domain) {
			n += c
			most = max(most, c)
		}
	}
	return n, most
}

// sellableEvent creates, through nd, a published event named name with
// one open free ticket type of capacity places, and answers both ids.
func sellableEvent(t *testing.T, nd *node, secret, name string, capacity int) (evt, typeID string) {
	t.Helper()
	st, ev := retry503(t, func() (int, map[string]any) {
		return do(t, "POST", nd.URL+"/v1/events", secret, map[string]any{"name": name, "timezone": "UTC", "startsAt": "2030-06-01T09:00:00Z"})
	})
	require.Equal(t, 201, st, "%v", ev)
	evt = ev["id"].(string)
	st, tt := retry503(t, func() (int, map[string]any) {
		return do(t, "POST", nd.URL+"/v1/events/"+evt+"/ticket-types", secret, map[string]any{"name": "GA", "capacity": capacity, "priceAmount": 0})
	})
	require.Equal(t, 201, st, "%v", tt)
	typeID = tt["id"].(string)
	st, m := do(t, "PATCH", nd.URL+"/v1/events/"+evt+"/ticket-types/"+typeID, secret, map[string]any{"status": "open"})
	require.Equal(t, 200, st, "%v", m)
	st, m = do(t, "PATCH", nd.URL+"/v1/events/"+evt, secret, map[string]any{"status": "published"})
	require.Equal(t, 200, st, "%v", m)
	return evt, typeID
}
