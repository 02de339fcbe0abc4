package mail

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	netmail "net/mail"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/stretchr/testify/require"

	"ticketd/persistence"
)

// received is one message an in-process SMTP server accepted.
type received struct {
	from string
	to   []string
	data []byte
}

type backend struct{ got chan received }

func (b backend) NewSession(*smtp.Conn) (smtp.Session, error) { return &session{got: b.got}, nil }

type session struct {
	got chan received
	cur received
}

func (s *session) Reset()        { s.cur = received{} }
func (s *session) Logout() error { return nil }
func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	s.cur.from = from
	return nil
}
func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.cur.to = append(s.cur.to, to)
	return nil
}
func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.cur.data = b
	s.got <- s.cur
	return nil
}

// startSMTP serves SMTP on ln until the test ends.
func startSMTP(t *testing.T, ln net.Listener) chan received {
	t.Helper()
	got := make(chan received, 16)
	srv := smtp.NewServer(backend{got: got})
	srv.Domain = "localhost"
	srv.ReadTimeout, srv.WriteTimeout = 5*time.Second, 5*time.Second
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return got
}

func openStore(t *testing.T) *persistence.Store {
	t.Helper()
	s, err := persistence.Open(persistence.Options{Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// owe writes a mail inbox entry as an event actor does.
func owe(t *testing.T, s *persistence.Store, tm TicketMail) {
	t.Helper()
	b := s.NewBatch()
	defer b.Close()
	v, err := json.Marshal(tm)
	require.NoError(t, err)
	b.Put([]byte(tm.Key), v)
	require.NoError(t, s.Commit(b))
}

func ticket(key, email string) TicketMail {
	return TicketMail{
		Key: key, Kind: "ticket", EventID: "evt_1", EventName: "Go Meetup <Berlin>", RegistrationID: "reg_1",
		Email: email, Name: "Ada", TicketName: "General admission", CheckinCode: "CHK-12345",
		PassURL: "https://tickets.example.com/pass/tok_" + strings.Repeat("x", 60) + "?a=1&b=2", CreatedAt: time.Unix(1_800_000_000, 0).UTC(),
	}
}

// parts decodes a multipart/alternative message into its parts by media type.
func parts(t *testing.T, raw []byte) (netmail.Header, map[string]string) {
	t.Helper()
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	require.NoError(t, err)
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	require.NoError(t, err)
	require.Equal(t, "multipart/alternative", mt)
	out := map[string]string{}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		var r io.Reader = p
		switch strings.ToLower(p.Header.Get("Content-Transfer-Encoding")) {
		case "quoted-printable":
			r = quotedprintable.NewReader(p)
		case "base64":
			r = base64.NewDecoder(base64.StdEncoding, p)
		}
		b, err := io.ReadAll(r)
		require.NoError(t, err)
		pt, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		out[pt] = string(b)
	}
	return msg.Header, out
}

func waitPending(t *testing.T, m *Mailer, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		p, err := m.Pending("", 10)
		return err == nil && len(p) == n
	}, 5*time.Second, 10*time.Millisecond)
}

func TestTicketEmailArrivesWithPassLink(t *testing.T) {
	s := openStore(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	got := startSMTP(t, ln)
	tm := ticket(InboxPrefix+"evt_1/0000000000000007-0000", "ada@example.com")
	owe(t, s, tm)

	m, err := New(Config{SMTPAddr: ln.Addr().String(), From: "Tickets <tickets@example.com>", BackoffMin: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond}, s)
	require.NoError(t, err)
	m.Start()
	t.Cleanup(func() { _ = m.Close() })

	var r received
	select {
	case r = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("no mail arrived")
	}
	require.Equal(t, "tickets@example.com", r.from)
	require.Equal(t, []string{"ada@example.com"}, r.to)
	h, p := parts(t, r.data)
	dec := new(mime.WordDecoder)
	subj, err := dec.DecodeHeader(h.Get("Subject"))
	require.NoError(t, err)
	require.Equal(t, "Your ticket: Go Meetup <Berlin>", subj)
	require.Contains(t, p["text/plain"], tm.PassURL)
	require.Contains(t, p["text/plain"], "General admission")
	require.Contains(t, p["text/plain"], "CHK-12345")
	// The HTML part escapes what it shows: & in the link becomes &amp;.
	require.Contains(t, p["text/html"], `href="https://tickets.example.com/pass/tok_`+strings.Repeat("x", 60)+`?a=1&amp;b=2"`)
	require.Contains(t, p["text/html"], "Go Meetup &lt;Berlin&gt;")

	// Delivered mail leaves the inbox.
	waitPending(t, m, 0)
	select {
	case r := <-got:
		t.Fatalf("mail sent twice: %s", r.data)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestMailWaitsWhileServerIsDownThenGoesOut(t *testing.T) {
	s := openStore(t)
	// Reserve a port, then free it: nothing listens there for now.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	m, err := New(Config{SMTPAddr: addr, BackoffMin: 20 * time.Millisecond, BackoffMax: 100 * time.Millisecond, SendTimeout: time.Second,
		Logger: slog.New(slog.DiscardHandler)}, s)
	require.NoError(t, err)
	m.Start()
	t.Cleanup(func() { _ = m.Close() })
	tm := ticket(InboxPrefix+"evt_1/0000000000000009-0000", "grace@example.com")
	owe(t, s, tm)
	m.Wake()

	// Several rounds fail meanwhile; the mail stays.
	time.Sleep(300 * time.Millisecond)
	p, err := m.Pending("", 10)
	require.NoError(t, err)
	require.Len(t, p, 1)
	require.Equal(t, tm.Key, p[0].Key)
	require.Equal(t, tm.PassURL, p[0].PassURL)

	ln, err = net.Listen("tcp", addr)
	require.NoError(t, err)
	got := startSMTP(t, ln)
	select {
	case r := <-got:
		require.Equal(t, []string{"grace@example.com"}, r.to)
		_, parts := parts(t, r.data)
		require.Contains(t, parts["text/plain"], tm.PassURL)
	case <-time.After(5 * time.Second):
		t.Fatal("mail did not go out once the server was up")
	}
	waitPending(t, m, 0)
}

func TestWithoutSMTPMailStaysAndPendingPages(t *testing.T) {
	s := openStore(t)
	m, err := New(Config{}, s)
	require.NoError(t, err)
	m.Start()
	t.Cleanup(func() { _ = m.Close() })
	for i, k := range []string{"evt_1/0000000000000001-0000", "evt_1/0000000000000002-0000", "evt_2/0000000000000001-0000"} {
		owe(t, s, ticket(InboxPrefix+k, "p"+string(rune('a'+i))+"@example.com"))
	}
	m.Wake()
	time.Sleep(50 * time.Millisecond)
	first, err := m.Pending("", 2)
	require.NoError(t, err)
	require.Len(t, first, 2)
	rest, err := m.Pending(first[1].Key, 2)
	require.NoError(t, err)
	require.Len(t, rest, 1)
	require.Equal(t, InboxPrefix+"evt_2/0000000000000001-0000", rest[0].Key)
}

func TestConfigValidate(t *testing.T) {
	require.Error(t, Config{SMTPAddr: "nohost"}.Validate())
	require.Error(t, Config{SMTPAddr: "localhost:0"}.Validate())
	require.Error(t, Config{BackoffMin: time.Minute, BackoffMax: time.Second}.Validate())
	require.NoError(t, Config{SMTPAddr: "localhost:25"}.Validate())
}

// A backlog larger than a round goes out in rounds that go on where the
// last stopped (the inbox cursor); mail owed behind the cursor (an event
// whose keys sort first) still goes out, and every mail once.
func TestBacklogGoesOutInRoundsWithMailBehindTheCursor(t *testing.T) {
	s := openStore(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	got := startSMTP(t, ln)
	want := map[string]bool{}
	for i := 1; i <= 5; i++ {
		to := fmt.Sprintf("b%d@example.com", i)
		owe(t, s, ticket(fmt.Sprintf("%sevt_2/%016x-0000", InboxPrefix, i), to))
		want[to] = true
	}
	m, err := New(Config{SMTPAddr: ln.Addr().String(), BatchMax: 2, BackoffMin: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond}, s)
	require.NoError(t, err)
	m.Start()
	t.Cleanup(func() { _ = m.Close() })

	seen := map[string]int{}
	recv := func() {
		t.Helper()
		select {
		case r := <-got:
			seen[r.to[0]]++
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d mails arrived", len(seen))
		}
	}
	for range 3 {
		recv()
	}
	owe(t, s, ticket(InboxPrefix+"evt_1/0000000000000001-0000", "behind@example.com"))
	want["behind@example.com"] = true
	m.Wake()
	for range 3 {
		recv()
	}
	waitPending(t, m, 0)
	select {
	case r := <-got:
		t.Fatalf("a mail went out twice: %v", r.to)
	case <-time.After(100 * time.Millisecond):
	}
	require.Len(t, seen, len(want))
	for to := range want {
		require.Equal(t, 1, seen[to], to)
	}
}

// authBackend is an SMTP server that requires AUTH PLAIN with one login.
type authBackend struct {
	got        chan received
	user, pass string
	attempts   chan string // every login tried, "user:pass"
}

func (b authBackend) NewSession(*smtp.Conn) (smtp.Session, error) {
	return &authSession{session: session{got: b.got}, b: b}, nil
}

type authSession struct {
	session
	b      authBackend
	authed bool
}

func (s *authSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *authSession) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, user, pass string) error {
		s.b.attempts <- user + ":" + pass
		if user != s.b.user || pass != s.b.pass {
			return errors.New("invalid credentials")
		}
		s.authed = true
		return nil
	}), nil
}

func (s *authSession) Mail(from string, o *smtp.MailOptions) error {
	if !s.authed {
		return &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "authentication required"}
	}
	return s.session.Mail(from, o)
}

// selfSigned returns a server certificate for 127.0.0.1 and a client TLS
// configuration that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		&tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

// startAuthSMTP serves SMTP with STARTTLS and AUTH PLAIN (offered only
// once TLS is on) on ln until the test ends; the returned TLS config
// trusts its certificate.
func startAuthSMTP(t *testing.T, ln net.Listener, user, pass string, withTLS bool) (chan received, chan string, *tls.Config) {
	t.Helper()
	b := authBackend{got: make(chan received, 16), user: user, pass: pass, attempts: make(chan string, 64)}
	cert, client := selfSigned(t)
	srv := smtp.NewServer(b)
	srv.Domain = "localhost"
	if withTLS {
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	} else {
		srv.AllowInsecureAuth = true // offers PLAIN in the clear
	}
	srv.ReadTimeout, srv.WriteTimeout = 5*time.Second, 5*time.Second
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return b.got, b.attempts, client
}

// TestMailLogsInWithSMTPAuth: with a username the mailer starts TLS and
// logs in before sending; with a wrong password nothing is sent and the
// mail stays queued, retried.
func TestMailLogsInWithSMTPAuth(t *testing.T) {
	// authMailer starts a server that accepts ticketd:s3cret (with or
	// without STARTTLS) and a mailer logging in with password, owing one
	// ticket mail.
	authMailer := func(t *testing.T, password string, withTLS bool) (*Mailer, chan received, chan string) {
		s := openStore(t)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		got, attempts, tc := startAuthSMTP(t, ln, "ticketd", "s3cret", withTLS)
		cfg := Config{SMTPAddr: ln.Addr().String(), Username: "ticketd", Password: password, From: "tickets@example.com",
			BackoffMin: 20 * time.Millisecond, BackoffMax: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
		if withTLS {
			cfg.TLSConfig = tc
		}
		m, err := New(cfg, s)
		require.NoError(t, err)
		m.Start()
		t.Cleanup(func() { _ = m.Close() })
		owe(t, s, ticket(InboxPrefix+"evt_1/0000000000000001-0000", "ada@example.com"))
		m.Wake()
		return m, got, attempts
	}
	t.Run("right password", func(t *testing.T) {
		m, got, attempts := authMailer(t, "s3cret", true)
		select {
		case r := <-got:
			require.Equal(t, []string{"ada@example.com"}, r.to)
		case <-time.After(5 * time.Second):
			t.Fatal("no mail arrived")
		}
		require.Equal(t, "ticketd:s3cret", <-attempts)
		waitPending(t, m, 0)
	})
	t.Run("wrong password", func(t *testing.T) {
		m, got, attempts := authMailer(t, "wrong", true)
		for range 2 { // tried, and tried again
			select {
			case a := <-attempts:
				require.Equal(t, "ticketd:wrong", a)
			case <-time.After(5 * time.Second):
				t.Fatal("the mailer never tried to log in")
			}
		}
		select {
		case r := <-got:
			t.Fatalf("mail sent without a login: %s", r.data)
		default:
		}
		waitPending(t, m, 1)
	})
	t.Run("no TLS: the password is not sent in the clear", func(t *testing.T) {
		m, got, attempts := authMailer(t, "s3cret", false)
		time.Sleep(300 * time.Millisecond) // several rounds
		select {
		case a := <-attempts:
			t.Fatalf("credentials sent without TLS: %s", a)
		case r := <-got:
			t.Fatalf("mail sent without a login: %s", r.data)
		default:
		}
		waitPending(t, m, 1)
	})
}

func TestMailConfigCredentials(t *testing.T) {
	require.Error(t, Config{SMTPAddr: "smtp.example.com:587", Password: "x"}.Validate(), "a password needs a username")
	require.Error(t, Config{Username: "u", Password: "x"}.Validate(), "credentials need a server")
	require.NoError(t, Config{SMTPAddr: "smtp.example.com:587", Username: "u", Password: "x"}.Validate())
}
