package http_test

// Black-box test of the mail outbox listing and the retry of parked mail,
// with the service's mailer delivering to a real SMTP server on loopback.

import (
	"context"
	"io"
	"log/slog"
	"net"
	nethttp "net/http"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/mail"
	"ticketd/persistence"
	"ticketd/snapshots"
)

// refusingRelay answers 550 at RCPT for the addresses in reject.
type refusingRelay struct {
	mu        sync.Mutex
	reject    map[string]bool
	delivered chan string
}

func (r *refusingRelay) NewSession(*smtp.Conn) (smtp.Session, error) {
	return &refusingSession{r: r}, nil
}

type refusingSession struct {
	r  *refusingRelay
	to []string
}

func (s *refusingSession) Reset()                               { s.to = nil }
func (s *refusingSession) Logout() error                        { return nil }
func (s *refusingSession) Mail(string, *smtp.MailOptions) error { return nil }
func (s *refusingSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	if s.r.reject[to] {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user here"}
	}
	s.to = append(s.to, to)
	return nil
}
func (s *refusingSession) Data(r io.Reader) error {
	_, err := io.Copy(io.Discard, r)
	for _, to := range s.to {
		s.r.delivered <- to
	}
	return err
}

func TestAPIOutboxParkedMailListedAndRetried(t *testing.T) {
	t.Parallel()
	relay := &refusingRelay{reject: map[string]bool{"nobody@example.com": true}, delivered: make(chan string, 16)}
	rl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	smtpSrv := smtp.NewServer(relay)
	smtpSrv.Domain = "localhost"
	go func() { _ = smtpSrv.Serve(rl) }()
	t.Cleanup(func() { _ = smtpSrv.Close() })

	s := &service{t: t, Admin: apiAdminToken, dir: t.TempDir()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.URL = "http://" + ln.Addr().String()
	s.Config = thttp.Config{Addr: ln.Addr().String(), BaseURL: s.URL, AdminToken: s.Admin,
		Logger: slog.New(slog.DiscardHandler)}
	s.Store, err = persistence.Open(persistence.Options{Dir: s.dir})
	require.NoError(t, err)
	m, err := mail.New(mail.Config{SMTPAddr: rl.Addr().String(), BackoffMin: 10 * time.Millisecond,
		BackoffMax: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}, s.Store)
	require.NoError(t, err)
	s.Sys, err = actors.Open(actors.Config{Event: event.Config{BaseURL: s.URL, OrderHold: 15 * time.Minute,
		CheckoutSessionTTL: 24 * time.Hour}, OnOutbox: m.Wake}, s.Store, snapshots.New(s.Store, 2))
	require.NoError(t, err)
	s.srv, err = thttp.New(s.Config, thttp.Deps{System: s.Sys, WebhookSecret: "whsec_test", Outbox: m})
	require.NoError(t, err)
	go func() { _ = s.srv.Serve(ln) }()
	m.Start()
	t.Cleanup(func() {
		if tr, ok := nethttp.DefaultTransport.(*nethttp.Transport); ok {
			tr.CloseIdleConnections()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.srv.Shutdown(ctx)
		_ = m.Close()
		_ = s.Sys.Close()
		_ = s.Store.Close()
	})
	f := &apiFx{s: s}
	u := f.unit(t)
	adm := f.admin(t)

	ev := apiPublished(t, u.dev)
	tt := apiOpenType(t, u.dev, ev, nil)
	apiRegister(t, u.dev, ev, tt, "nobody@example.com")
	apiRegister(t, u.dev, ev, tt, "ada@example.com")
	select {
	case to := <-relay.delivered:
		require.Equal(t, "ada@example.com", to, "the refused address held up the other")
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
	relay.mu.Lock()
	delete(relay.reject, "nobody@example.com")
	relay.mu.Unlock()
	got := apiWant(t, adm.Do("POST", "/admin/v1/outbox/"+id+"/retry", nil), 200)
	require.Equal(t, "retrying", got["status"])
	select {
	case to := <-relay.delivered:
		require.Equal(t, "nobody@example.com", to)
	case <-time.After(5 * time.Second):
		t.Fatal("the retried mail did not go out")
	}
	require.Eventually(t, func() bool {
		return len(apiData(t, apiWant(t, adm.Do("GET", "/admin/v1/outbox", nil), 200))) == 0
	}, 5*time.Second, 20*time.Millisecond)
	apiWantErr(t, adm.Do("POST", "/admin/v1/outbox/"+id+"/retry", nil), 404, "NOT_FOUND")
}
