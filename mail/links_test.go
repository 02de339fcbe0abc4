package mail

import (
	"mime"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConsoleInvitationArrives: a console invitation in the mail inbox (the
// directory's key shape) goes out through a real SMTP listener as a plain
// text mail with its link, and leaves the inbox.
func TestConsoleInvitationArrives(t *testing.T) {
	s := openStore(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	got := startSMTP(t, ln)
	tm := TicketMail{Key: InboxPrefix + "directory/0000000000000003-0000", Kind: MailInvitation,
		Email: "olivia@example.com", EventName: "Acme Events", TicketName: "owner",
		PassURL: "https://tickets.example.com/console/invitations/tok123", CreatedAt: time.Now().UTC()}
	owe(t, s, tm)
	m, err := New(Config{SMTPAddr: ln.Addr().String(), From: "tickets@example.com", BackoffMin: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond}, s)
	require.NoError(t, err)
	m.Start()
	t.Cleanup(func() { _ = m.Close() })
	var r received
	select {
	case r = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("no mail arrived")
	}
	require.Equal(t, []string{"olivia@example.com"}, r.to)
	h, p := parts(t, r.data)
	subj, err := new(mime.WordDecoder).DecodeHeader(h.Get("Subject"))
	require.NoError(t, err)
	require.Equal(t, "You are invited to Acme Events on ticketd", subj)
	require.Contains(t, p["text/plain"], tm.PassURL)
	require.Contains(t, p["text/plain"], "as owner")
	waitPending(t, m, 0)
}
