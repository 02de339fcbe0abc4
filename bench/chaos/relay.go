package chaos

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-smtp"
)

// The relay's refusals: Postfix answers 450 at RCPT for a domain it cannot
// resolve, and 550 for a mailbox that does not exist.
const (
	relayTempFailDomain = "tempfail.example"
	relayRefusedAddress = "refused@chaos.example"
	relayMaxRecipients  = 100_000 // bound on the arrivals it remembers
)

// Relay is a loopback SMTP server that refuses some recipients and
// records when each accepted recipient's message arrived.
//
// Concurrency: safe from any goroutine; go-smtp serves each connection on
// its own goroutine.
type Relay struct {
	Addr string
	srv  *smtp.Server

	mu      sync.Mutex
	arrived map[string]time.Time

	TempFails atomic.Int64 // 450 answers
	Refusals  atomic.Int64 // 550 answers
	Messages  atomic.Int64
}

// StartRelay serves SMTP on a free loopback port.
func StartRelay() (*Relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: relay: %w", err)
	}
	r := &Relay{Addr: ln.Addr().String(), arrived: map[string]time.Time{}}
	r.srv = smtp.NewServer(relayBackend{r})
	r.srv.Domain = "localhost"
	r.srv.ReadTimeout, r.srv.WriteTimeout = 10*time.Second, 10*time.Second
	r.srv.MaxRecipients = 100
	r.srv.MaxMessageBytes = 1 << 20
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// Close stops the server and its connections.
func (r *Relay) Close() error { return r.srv.Close() }

// Arrived returns when the message to addr arrived (ok false when not yet).
func (r *Relay) Arrived(addr string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.arrived[strings.ToLower(addr)]
	return t, ok
}

type relayBackend struct{ r *Relay }

func (b relayBackend) NewSession(*smtp.Conn) (smtp.Session, error) {
	return &relaySession{r: b.r}, nil
}

type relaySession struct {
	r  *Relay
	to []string
}

func (s *relaySession) Reset()        { s.to = nil }
func (s *relaySession) Logout() error { return nil }

func (s *relaySession) Mail(string, *smtp.MailOptions) error { return nil }

func (s *relaySession) Rcpt(to string, _ *smtp.RcptOptions) error {
	to = strings.ToLower(to)
	switch {
	case strings.HasSuffix(to, "@"+relayTempFailDomain):
		s.r.TempFails.Add(1)
		return &smtp.SMTPError{Code: 450, EnhancedCode: smtp.EnhancedCode{4, 1, 2}, Message: "Recipient address rejected: Domain not found"}
	case to == relayRefusedAddress:
		s.r.Refusals.Add(1)
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "Recipient address rejected: User unknown"}
	}
	s.to = append(s.to, to)
	return nil
}

func (s *relaySession) Data(r io.Reader) error {
	if _, err := io.Copy(io.Discard, r); err != nil {
		return err
	}
	now := time.Now()
	s.r.Messages.Add(1)
	s.r.mu.Lock()
	for _, to := range s.to {
		if _, seen := s.r.arrived[to]; !seen && len(s.r.arrived) < relayMaxRecipients {
			s.r.arrived[to] = now
		}
	}
	s.r.mu.Unlock()
	return nil
}
