package mail

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	htmlstd "html"
	htmltemplate "html/template"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	texttemplate "text/template"
	"time"

	gomail "github.com/wneessen/go-mail"

	"ticketd/ask"
	"ticketd/outbox"
	"ticketd/persistence"
)

// Defaults of Config.
const (
	DefaultFrom        = "ticketd <tickets@localhost>"
	DefaultBackoffMin  = time.Second
	DefaultBackoffMax  = 5 * time.Minute
	DefaultSendTimeout = 30 * time.Second
	DefaultBatchMax    = 100
	DefaultRetryMin    = 30 * time.Second
	DefaultRetryMax    = time.Hour
	DefaultMaxAttempts = 48
	// QueueName is the outbox queue of ticket mail (keys under
	// outbox.Prefix + QueueName).
	QueueName = "mail"
	// MaxPending bounds one Pending page.
	MaxPending = 1000
)

// Config configures a Mailer.
type Config struct {
	// SMTPAddr is the SMTP server as host:port. Empty keeps mail
	// queued.
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
	// BackoffMin and BackoffMax bound the delay of the whole sender while
	// the server cannot be reached.
	BackoffMin time.Duration
	BackoffMax time.Duration
	// RetryMin and RetryMax bound the delay of one entry after the server
	// refused it for now (4xx, a connection lost under it).
	RetryMin time.Duration
	RetryMax time.Duration
	// MaxAttempts temporary failures park an entry.
	MaxAttempts int
	// SendTimeout bounds one round: dial, send, quit.
	SendTimeout time.Duration
	// BatchMax bounds the entries one round sends.
	BatchMax int
	// AppleWallet and GoogleWallet: the wallets configured (decisions
	// §21); a ticket email links them next to the PDF, which it always
	// links.
	AppleWallet, GoogleWallet bool
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
	if c.RetryMin <= 0 {
		c.RetryMin = DefaultRetryMin
	}
	if c.RetryMax <= 0 {
		c.RetryMax = max(DefaultRetryMax, c.RetryMin)
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
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
	if c.RetryMin > c.RetryMax && c.RetryMax > 0 {
		return errors.New("mail: retry min above max")
	}
	if c.MaxAttempts > 1000 {
		return errors.New("mail: max attempts above 1000")
	}
	if c.BatchMax > 10000 {
		return errors.New("mail: batch max above 10000")
	}
	return nil
}

// Mailer delivers the owed mail (the mail inbox and its queue) over SMTP. See the package documentation.
type Mailer struct {
	cfg   Config
	store *persistence.Store
	text  *texttemplate.Template
	html  *htmltemplate.Template
	queue *outbox.Queue
	loop  *outbox.Loop
}

// New returns a Mailer of store's owed mail. Start it to deliver.
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
	q, err := outbox.NewQueue(store, QueueName, InboxPrefix)
	if err != nil {
		return nil, err
	}
	m := &Mailer{cfg: cfg, store: store, text: text, html: html, queue: q}
	m.loop, err = outbox.NewLoop(outbox.LoopConfig{Name: "mail", Logger: cfg.Logger, BackoffMin: cfg.BackoffMin,
		BackoffMax: cfg.BackoffMax, Now: cfg.Now}, m.round)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Start starts delivery; it first drains what an earlier run left.
func (m *Mailer) Start() { m.loop.Start() }

// Close stops delivery and waits for the round in flight. Mail not yet
// delivered stays queued.
func (m *Mailer) Close() error { return m.loop.Close() }

// Wake asks for a delivery round soon. It never blocks.
func (m *Mailer) Wake() { m.loop.Wake() }

// Entry is an owed mail with its delivery state.
type Entry struct {
	TicketMail
	// ID is the entry's key after InboxPrefix.
	ID            string
	State         outbox.State
	Attempts      int
	NextAttemptAt time.Time // retrying only
	LastError     string
	LastAttemptAt time.Time
	SentAt        time.Time // State Sent: when it was delivered
}

func (m *Mailer) entry(e outbox.Entry) Entry {
	out := Entry{ID: e.ID, State: e.State, Attempts: e.Attempts, NextAttemptAt: e.NextAt, LastError: e.LastError,
		LastAttemptAt: e.LastAt}
	if len(e.Value) > 0 {
		if err := json.Unmarshal(e.Value, &out.TicketMail); err != nil && out.LastError == "" {
			out.LastError = "undecodable outbox entry: " + err.Error()
		}
	}
	out.Key = InboxPrefix + e.ID
	return out
}

// Pending lists the owed mail (waiting, retrying and parked) in key
// order after the key after ("" for the start), at most limit (1 to
// MaxPending).
func (m *Mailer) Pending(after string, limit int) ([]Entry, error) {
	limit = min(max(limit, 1), MaxPending)
	after = strings.TrimPrefix(after, InboxPrefix)
	es, err := m.queue.List(after, limit)
	if err != nil {
		return nil, fmt.Errorf("mail: %w", err)
	}
	out := make([]Entry, len(es))
	for i, e := range es {
		out[i] = m.entry(e)
	}
	return out, nil
}

// Retry makes parked entry id (its key after InboxPrefix) go out
// again now. outbox.ErrNotFound or outbox.ErrNotParked otherwise.
func (m *Mailer) Retry(id string) (Entry, error) {
	return m.RetryRecorded(id, nil)
}

// RetryRecorded is Retry for a request with an Idempotency-Key: rec (nil:
// none) is called with the retried Entry and its record committed with
// the requeue (outbox.Queue.RequeueRecorded); a requeue made before
// answers *ask.Replayed with its record.
func (m *Mailer) RetryRecorded(id string, rec *ask.Recorder) (Entry, error) {
	var orec *ask.Recorder
	if rec != nil {
		r := *rec
		if rec.Value != nil {
			r.Value = func(res any) []byte { return rec.Value(m.entry(res.(outbox.Entry))) }
		}
		orec = &r
	}
	e, err := m.queue.RequeueRecorded(id, m.cfg.Now(), orec)
	if err != nil {
		return m.entry(e), err
	}
	m.Wake()
	return m.entry(e), nil
}

// round settles up to BatchMax due retries and BatchMax fresh entries over
// one connection, each by itself: delivered, retried later or parked. It
// fails as a whole only when the relay cannot be reached or the outcome
// cannot be stored, and then charges no entry.
func (m *Mailer) round(ctx context.Context) (outbox.Round, error) {
	if m.cfg.SMTPAddr == "" {
		return outbox.Round{}, nil
	}
	now := m.cfg.Now()
	due, dueFull, err := m.queue.Due(now, m.cfg.BatchMax)
	if err != nil {
		return outbox.Round{}, err
	}
	var fresh []outbox.Entry
	freshFull, err := m.queue.Fresh(m.cfg.BatchMax, func(e outbox.Entry) { fresh = append(fresh, e) })
	if err != nil {
		return outbox.Round{}, err
	}
	if len(due)+len(fresh) == 0 {
		return m.next(false)
	}
	dctx, cancel := context.WithTimeout(ctx, m.cfg.SendTimeout)
	defer cancel()
	c, stop, err := m.client(ctx)
	if err != nil {
		m.queue.Unread()
		return outbox.Round{}, err
	}
	defer stop()
	if err := c.DialWithContext(dctx); err != nil {
		m.queue.Unread()
		return outbox.Round{}, fmt.Errorf("mail: dial %s: %w", m.cfg.SMTPAddr, err)
	}
	defer func() { _ = c.Close() }()
	settled := 0
	for _, e := range append(due, fresh...) {
		if ctx.Err() != nil {
			m.queue.Unread()
			return outbox.Round{}, nil
		}
		charged, broken, err := m.send(ctx, c, e)
		if err != nil {
			m.queue.Unread()
			return outbox.Round{}, err
		}
		if charged {
			settled++
		}
		if broken {
			// The rest go out on the next connection; if nothing was
			// settled on this one, the relay is in trouble as a whole.
			m.queue.Unread()
			if settled == 0 {
				return outbox.Round{}, fmt.Errorf("mail: connection to %s failed before any delivery", m.cfg.SMTPAddr)
			}
			return outbox.Round{More: true}, nil
		}
	}
	return m.next(dueFull || freshFull)
}

// next reports the round's end: go on at once, or sleep until the
// earliest retry.
func (m *Mailer) next(more bool) (outbox.Round, error) {
	if more {
		return outbox.Round{More: true}, nil
	}
	at, ok, err := m.queue.NextDue()
	if err != nil || !ok {
		return outbox.Round{}, err
	}
	return outbox.Round{Next: at}, nil
}

// send makes one attempt of e and settles it. charged reports that e was
// settled (delivered, retried later or parked); broken that the
// connection cannot be used further. err is a failure to store the
// outcome.
func (m *Mailer) send(ctx context.Context, c *gomail.Client, e outbox.Entry) (charged, broken bool, err error) {
	now := m.cfg.Now()
	var tm TicketMail
	if err := json.Unmarshal(e.Value, &tm); err != nil {
		return true, false, m.settle(e, now, false, "undecodable outbox entry: "+err.Error())
	}
	msg, err := m.Render(tm)
	if err != nil {
		return true, false, m.settle(e, now, false, err.Error())
	}
	err = c.Send(msg)
	if err == nil {
		return true, false, m.settle(e, now, true, "")
	}
	if ctx.Err() != nil {
		return false, true, nil // closing cut the connection: not e's fault
	}
	var se *gomail.SendError
	code := 0
	if errors.As(err, &se) {
		if se.Reason == gomail.ErrConnCheck {
			return false, true, nil // the connection died before e's turn
		}
		code = se.ErrorCode()
	}
	switch {
	case code >= 500:
		return true, false, m.settle(e, now, false, err.Error())
	case code >= 400 && code != 421:
		return true, false, m.retry(e, now, err.Error())
	default:
		// No reply code (the connection broke under e) or 421 (the relay
		// closes the channel): e is retried, and this connection is done.
		return true, true, m.retry(e, now, err.Error())
	}
}

// settle deletes a delivered entry, or parks one that failed for good.
func (m *Mailer) settle(e outbox.Entry, now time.Time, delivered bool, reason string) error {
	b := m.store.NewBatch()
	defer b.Close()
	if delivered {
		m.queue.Done(b, e)
		if err := m.recordSent(b, e, now); err != nil {
			return err
		}
	} else {
		m.cfg.Logger.Warn("mail: undeliverable; parked until retried", "key", InboxPrefix+e.ID, "err", reason)
		if _, err := m.queue.Park(b, e, now, reason); err != nil {
			return err
		}
	}
	if err := m.store.Commit(b); err != nil {
		return fmt.Errorf("mail: settle %s: %w", e.ID, err)
	}
	return nil
}

// retry schedules e again after a temporary failure, or parks it once it
// has failed MaxAttempts times.
func (m *Mailer) retry(e outbox.Entry, now time.Time, reason string) error {
	if e.Attempts+1 >= m.cfg.MaxAttempts {
		return m.settle(e, now, false, fmt.Sprintf("gave up after %d attempts: %s", e.Attempts+1, reason))
	}
	b := m.store.NewBatch()
	defer b.Close()
	at := now.Add(outbox.Backoff(e.Attempts+1, m.cfg.RetryMin, m.cfg.RetryMax))
	if _, err := m.queue.Retry(b, e, at, now, reason); err != nil {
		return err
	}
	if err := m.store.Commit(b); err != nil {
		return fmt.Errorf("mail: reschedule %s: %w", e.ID, err)
	}
	return nil
}

// client returns an SMTP client whose connection is closed when ctx ends,
// so Close does not wait for a slow relay; stop releases that watch.
func (m *Mailer) client(ctx context.Context) (c *gomail.Client, stop func() bool, err error) {
	host, port, _ := net.SplitHostPort(m.cfg.SMTPAddr)
	p, _ := strconv.Atoi(port)
	var mu sync.Mutex
	var conn net.Conn
	dial := func(dctx context.Context, network, addr string) (net.Conn, error) {
		cn, err := (&net.Dialer{}).DialContext(dctx, network, addr)
		mu.Lock()
		conn = cn
		mu.Unlock()
		return cn, err
	}
	stop = context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if conn != nil {
			_ = conn.Close()
		}
	})
	opts := []gomail.Option{gomail.WithPort(p), gomail.WithTLSPolicy(gomail.TLSOpportunistic),
		gomail.WithTimeout(m.cfg.SendTimeout), gomail.WithHELO("ticketd"), gomail.WithDialContextFunc(dial)}
	if m.cfg.TLSConfig != nil {
		opts = append(opts, gomail.WithTLSConfig(m.cfg.TLSConfig))
	}
	if m.cfg.Username != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover),
			gomail.WithUsername(m.cfg.Username), gomail.WithPassword(m.cfg.Password))
	}
	c, err = gomail.NewClient(host, opts...)
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("mail: client: %w", err)
	}
	return c, stop, nil
}

// renderLink builds the mail of a console link (actors.CreateLink): an
// invitation to a business unit, or a password reset; plain text.
func (m *Mailer) renderLink(tm TicketMail) (*gomail.Msg, error) {
	msg := gomail.NewMsg(gomail.WithCharset(gomail.CharsetUTF8))
	if err := msg.From(m.cfg.From); err != nil {
		return nil, fmt.Errorf("mail: from: %w", err)
	}
	if err := msg.To(tm.Email); err != nil {
		return nil, fmt.Errorf("mail: to %q: %w", tm.Email, err)
	}
	msg.SetDateWithValue(m.cfg.Now())
	msg.SetMessageID()
	unit := oneLine(tm.EventName)
	var body string
	if tm.Kind == MailInvitation {
		msg.Subject("You are invited to " + unit + " on ticketd")
		body = "You are invited to the ticketd console of " + unit + " as " + oneLine(tm.TicketName) +
			".\n\nAccept the invitation (the link works once):\n" + tm.PassURL + "\n"
	} else {
		msg.Subject("Choose a new ticketd console password")
		body = "Someone who manages " + unit + " made you a link to choose a new console password " +
			"(it works once):\n" + tm.PassURL + "\n\nIf you did not ask for it, ignore this mail.\n"
	}
	msg.SetBodyString(gomail.TypeTextPlain, body)
	msg.AddAlternativeString(gomail.TypeTextHTML, "<p>"+strings.ReplaceAll(htmlstd.EscapeString(body), "\n", "<br>")+"</p>")
	return msg, nil
}
