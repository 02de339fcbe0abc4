package mail

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	texttemplate "text/template"
	"time"

	gomail "github.com/wneessen/go-mail"

	"ticketd/actors"
	"ticketd/persistence"
)

// Defaults of Config.
const (
	DefaultFrom        = "ticketd <tickets@localhost>"
	DefaultBackoffMin  = time.Second
	DefaultBackoffMax  = 5 * time.Minute
	DefaultSendTimeout = 30 * time.Second
	DefaultBatchMax    = 100
	// MaxPending bounds one Pending page.
	MaxPending = 1000
)

// Config configures a Mailer.
type Config struct {
	// SMTPAddr is the SMTP server as host:port. Empty keeps mail in the
	// outbox.
	SMTPAddr string
	// Username and Password, when Username is set, log in to the SMTP
	// server (AUTH) with the strongest mechanism it offers. Over a
	// connection without TLS (no STARTTLS) only the mechanisms that do not
	// reveal the password (SCRAM, CRAM-MD5) are used.
	Username string
	Password string
	// TLSConfig, if set, is the TLS configuration of STARTTLS (a private
	// CA, say); nil uses the system's roots and the server's host name.
	TLSConfig *tls.Config
	// From is the sender address (default DefaultFrom).
	From string
	// Logger receives delivery failures (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock of the Date header (default time.Now).
	Now func() time.Time
	// BackoffMin and BackoffMax bound the retry delay while the server is
	// down or refuses mail.
	BackoffMin time.Duration
	BackoffMax time.Duration
	// SendTimeout bounds one round: dial, send, quit.
	SendTimeout time.Duration
	// BatchMax bounds the entries one round sends.
	BatchMax int
}

func (c *Config) setDefaults() {
	if c.From == "" {
		c.From = DefaultFrom
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.BackoffMin <= 0 {
		c.BackoffMin = DefaultBackoffMin
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = DefaultBackoffMax
	}
	if c.SendTimeout <= 0 {
		c.SendTimeout = DefaultSendTimeout
	}
	if c.BatchMax <= 0 {
		c.BatchMax = DefaultBatchMax
	}
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.SMTPAddr != "" {
		host, port, err := net.SplitHostPort(c.SMTPAddr)
		if err != nil || host == "" {
			return fmt.Errorf("mail: smtp addr %q: want host:port", c.SMTPAddr)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return fmt.Errorf("mail: smtp addr %q: bad port", c.SMTPAddr)
		}
	}
	if c.Password != "" && c.Username == "" {
		return errors.New("mail: smtp password without a username")
	}
	if c.Username != "" && c.SMTPAddr == "" {
		return errors.New("mail: smtp username without an smtp addr")
	}
	if c.BackoffMin > c.BackoffMax && c.BackoffMax > 0 {
		return errors.New("mail: backoff min above max")
	}
	if c.BatchMax > 10000 {
		return errors.New("mail: batch max above 10000")
	}
	return nil
}

// Mailer drains the outbox over SMTP. See the package documentation.
type Mailer struct {
	cfg   Config
	store *persistence.Store
	text  *texttemplate.Template
	html  *htmltemplate.Template

	// queue is where delivery goes on reading the outbox; only the
	// delivery goroutine uses it.
	queue persistence.Cursor

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
	once sync.Once
	run  bool
}

// New returns a Mailer of store's outbox. Start it to deliver.
func New(cfg Config, store *persistence.Store) (*Mailer, error) {
	if store == nil {
		return nil, errors.New("mail: no store")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	text, html, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	return &Mailer{
		cfg: cfg, store: store, text: text, html: html,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}, nil
}

// Start starts the delivery goroutine; it first drains what an earlier run
// left in the outbox.
func (m *Mailer) Start() {
	m.run = true
	m.Wake()
	go m.loop()
}

// Close stops the delivery goroutine and waits for it (a round in flight
// ends within Config.SendTimeout). Mail not yet delivered stays in the
// outbox.
func (m *Mailer) Close() error {
	m.once.Do(func() { close(m.stop) })
	if m.run {
		<-m.done
	}
	return nil
}

// Wake asks for a delivery round soon. It never blocks.
func (m *Mailer) Wake() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Pending lists outbox entries in key order after the key after ("" for
// the start), at most limit (1 to MaxPending).
func (m *Mailer) Pending(after string, limit int) ([]actors.TicketMail, error) {
	limit = min(max(limit, 1), MaxPending)
	out := []actors.TicketMail{}
	errFull := errors.New("full")
	var from []byte
	if after != "" {
		from = []byte(after)
	}
	err := m.store.ScanRange([]byte(actors.OutboxPrefix), from, nil, func(key, value []byte) error {
		if len(out) == limit {
			return errFull
		}
		var tm actors.TicketMail
		if err := json.Unmarshal(value, &tm); err != nil {
			return fmt.Errorf("mail: decode outbox entry %s: %w", key, err)
		}
		tm.Key = string(key)
		out = append(out, tm)
		return nil
	})
	if err != nil && !errors.Is(err, errFull) {
		return nil, err
	}
	return out, nil
}

func (m *Mailer) loop() {
	defer close(m.done)
	failures := 0
	var retry <-chan time.Time
	for {
		select {
		case <-m.stop:
			return
		case <-m.wake:
		case <-retry:
		}
		retry = nil
		if m.cfg.SMTPAddr == "" {
			continue
		}
		more, err := m.round()
		switch {
		case err != nil:
			failures++
			d := m.backoff(failures)
			m.cfg.Logger.Warn("mail: delivery failed; retrying", "err", err, "in", d.Round(time.Millisecond))
			retry = time.After(d)
		case more:
			failures = 0
			m.Wake()
		default:
			failures = 0
		}
	}
}

// backoff is the delay after n consecutive failed rounds: BackoffMin
// doubling up to BackoffMax, then jittered into [d/2, d).
func (m *Mailer) backoff(n int) time.Duration {
	d := m.cfg.BackoffMin
	for i := 1; i < n && d < m.cfg.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, m.cfg.BackoffMax)
	half := d / 2
	return half + rand.N(half+1)
}

type entry struct {
	key  string
	mail actors.TicketMail
}

// round sends at most BatchMax entries over one connection. more reports a
// full batch (there may be more to send). An entry that fails to render is
// logged and left in place; an entry the server refuses fails the round.
func (m *Mailer) round() (more bool, err error) {
	var batch []entry
	// The outbox is read with a cursor (delivered entries are deleted, and
	// their tombstones would otherwise be stepped over every round). A
	// round that fails puts it back, so its entries come first again.
	prev := m.queue
	defer func() {
		if err != nil {
			m.queue = prev
		}
	}()
	more, err = m.queue.Next(m.store, []byte(actors.OutboxPrefix), m.cfg.BatchMax, func(key, value []byte) error {
		var tm actors.TicketMail
		if err := json.Unmarshal(value, &tm); err != nil {
			m.cfg.Logger.Error("mail: undecodable outbox entry left in place", "key", string(key), "err", err)
			return nil
		}
		batch = append(batch, entry{key: string(key), mail: tm})
		return nil
	})
	if err != nil {
		return false, err
	}
	if len(batch) == 0 {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.SendTimeout)
	defer cancel()
	c, err := m.client()
	if err != nil {
		return false, err
	}
	if err := c.DialWithContext(ctx); err != nil {
		return false, fmt.Errorf("mail: dial %s: %w", m.cfg.SMTPAddr, err)
	}
	defer func() { _ = c.Close() }()
	var failed error
	delivered := 0
	for _, e := range batch {
		msg, err := m.Render(e.mail)
		if err != nil {
			m.cfg.Logger.Error("mail: cannot render outbox entry; left in place", "key", e.key, "err", err)
			continue
		}
		if err := c.Send(msg); err != nil {
			failed = fmt.Errorf("mail: send %s: %w", e.key, err)
			var se *gomail.SendError
			if errors.As(err, &se) && se.IsTemp() {
				break // the server is struggling: back off as a whole
			}
			continue
		}
		if err := m.delete(e.key); err != nil {
			return false, err
		}
		delivered++
	}
	// A full batch of entries that cannot be sent must not spin: go on
	// at once only when this round made progress.
	return more && delivered > 0, failed
}

func (m *Mailer) delete(key string) error {
	b := m.store.NewBatch()
	defer b.Close()
	b.Delete([]byte(key))
	if err := m.store.Commit(b); err != nil {
		return fmt.Errorf("mail: delete delivered %s: %w", key, err)
	}
	return nil
}

func (m *Mailer) client() (*gomail.Client, error) {
	host, port, _ := net.SplitHostPort(m.cfg.SMTPAddr)
	p, _ := strconv.Atoi(port)
	opts := []gomail.Option{gomail.WithPort(p), gomail.WithTLSPolicy(gomail.TLSOpportunistic),
		gomail.WithTimeout(m.cfg.SendTimeout), gomail.WithHELO("ticketd")}
	if m.cfg.TLSConfig != nil {
		opts = append(opts, gomail.WithTLSConfig(m.cfg.TLSConfig))
	}
	if m.cfg.Username != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover),
			gomail.WithUsername(m.cfg.Username), gomail.WithPassword(m.cfg.Password))
	}
	c, err := gomail.NewClient(host, opts...)
	if err != nil {
		return nil, fmt.Errorf("mail: client: %w", err)
	}
	return c, nil
}

// Render builds the email of an outbox entry: a text part and an HTML
// alternative, both with the pass link.
func (m *Mailer) Render(tm actors.TicketMail) (*gomail.Msg, error) {
	if tm.Kind != "" && tm.Kind != "ticket" {
		return nil, fmt.Errorf("mail: unknown outbox kind %q", tm.Kind)
	}
	msg := gomail.NewMsg(gomail.WithCharset(gomail.CharsetUTF8))
	if err := msg.From(m.cfg.From); err != nil {
		return nil, fmt.Errorf("mail: from: %w", err)
	}
	if err := msg.To(tm.Email); err != nil {
		return nil, fmt.Errorf("mail: to %q: %w", tm.Email, err)
	}
	msg.Subject("Your ticket: " + oneLine(tm.EventName))
	msg.SetDateWithValue(m.cfg.Now())
	msg.SetMessageID()
	var text, html strings.Builder
	if err := m.text.Execute(&text, tm); err != nil {
		return nil, fmt.Errorf("mail: render text: %w", err)
	}
	if err := m.html.Execute(&html, tm); err != nil {
		return nil, fmt.Errorf("mail: render html: %w", err)
	}
	msg.SetBodyString(gomail.TypeTextPlain, text.String())
	msg.AddAlternativeString(gomail.TypeTextHTML, html.String())
	return msg, nil
}

// oneLine keeps a header value on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
