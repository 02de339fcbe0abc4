package smtptest

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-smtp"
)

// Message is a message the relay accepted.
type Message struct {
	From string
	To   []string
	Data []byte
}

// MaxQueued bounds the accepted messages waiting in Delivered; a relay
// whose messages nobody reads blocks at DATA, as a full relay would.
const MaxQueued = 1024

// Relay is a running SMTP relay. See the package documentation.
type Relay struct {
	// Addr is the relay's host:port.
	Addr string

	srv       *smtp.Server
	delivered chan Message

	mu       sync.Mutex
	greylist map[string]bool
	reject   map[string]bool
	stall    chan struct{}
	rcpts    map[string][]time.Time
}

// Start serves a relay on a fresh loopback port until Close.
func Start() (*Relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("smtptest: listen: %w", err)
	}
	r := &Relay{Addr: ln.Addr().String(), delivered: make(chan Message, MaxQueued),
		greylist: map[string]bool{}, reject: map[string]bool{}, rcpts: map[string][]time.Time{}}
	r.srv = smtp.NewServer(r)
	r.srv.Domain = "localhost"
	r.srv.ReadTimeout, r.srv.WriteTimeout = 30*time.Second, 30*time.Second
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// Close stops the relay (and ends a stall).
func (r *Relay) Close() error {
	r.Stall(false)
	return r.srv.Close()
}

// Delivered receives every accepted message, one per transaction.
func (r *Relay) Delivered() <-chan Message { return r.delivered }

// Greylist makes the relay answer 450 at RCPT for every address of domain
// (on), or accept them again.
func (r *Relay) Greylist(domain string, on bool) { r.set(r.greylist, strings.ToLower(domain), on) }

// Reject makes the relay answer 550 at RCPT for address (on), or accept
// it again.
func (r *Relay) Reject(address string, on bool) { r.set(r.reject, strings.ToLower(address), on) }

func (r *Relay) set(m map[string]bool, k string, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if on {
		m[k] = true
	} else {
		delete(m, k)
	}
}

// Stall makes every RCPT wait without an answer (on) until Stall(false).
func (r *Relay) Stall(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case on && r.stall == nil:
		r.stall = make(chan struct{})
	case !on && r.stall != nil:
		close(r.stall)
		r.stall = nil
	}
}

// Tries returns when address was asked for at RCPT, oldest first.
func (r *Relay) Tries(address string) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.rcpts[strings.ToLower(address)]...)
}

// NewSession implements smtp.Backend.
func (r *Relay) NewSession(*smtp.Conn) (smtp.Session, error) { return &session{r: r}, nil }

type session struct {
	r    *Relay
	from string
	to   []string
}

func (s *session) Reset()        { s.from, s.to = "", nil }
func (s *session) Logout() error { return nil }

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	s.from = from
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.r.mu.Lock()
	stall := s.r.stall
	s.r.mu.Unlock()
	if stall != nil {
		<-stall
	}
	addr := strings.ToLower(to)
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.r.rcpts[addr] = append(s.r.rcpts[addr], time.Now())
	_, domain, _ := strings.Cut(addr, "@")
	if s.r.greylist[domain] {
		return &smtp.SMTPError{Code: 450, EnhancedCode: smtp.EnhancedCode{4, 7, 1}, Message: "greylisted, try again later"}
	}
	if s.r.reject[addr] {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user here"}
	}
	s.to = append(s.to, to)
	return nil
}

func (s *session) Data(rd io.Reader) error {
	b, err := io.ReadAll(io.LimitReader(rd, 10<<20))
	if err != nil {
		return err
	}
	s.r.delivered <- Message{From: s.from, To: append([]string(nil), s.to...), Data: b}
	return nil
}
