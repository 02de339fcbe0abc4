package wallet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"ticketd/persistence"
	"ticketd/wallet/apple"
	"ticketd/wallet/google"
)

// Bounds.
const (
	// devicePassesMax bounds the passes one device may register, and
	// passDevicesMax the devices of one pass (a family shares a ticket
	// on a few phones, not hundreds).
	devicePassesMax = 500
	passDevicesMax  = 20
	// changesMax bounds the changes waiting for the worker.
	changesMax = 4096
	// pushTimeout bounds one push or one Wallet API call.
	pushTimeout = 15 * time.Second
	// pushTokenMax bounds a push token's length (APNs tokens are 64 hex).
	pushTokenMax = 200
)

// Errors of the web service.
var (
	ErrUnauthorized = errors.New("wallet: wrong authentication token")
	ErrNotFound     = errors.New("wallet: no such pass")
	ErrInvalid      = errors.New("wallet: invalid request")
	ErrTooMany      = errors.New("wallet: too many registrations")
)

// Ticket is a registration as the wallets show it, read from its event
// (Config.Lookup).
type Ticket struct {
	EventID, RegistrationID string
	PassToken, PassURL      string
	EventName               string
	StartsAt, EndsAt        *time.Time
	Timezone                string
	Venue, Address          string
	Attendee, Email         string
	TicketType              string
	CheckinCode             string
	// Admits: the registration is confirmed.
	Admits bool
	// UpdatedAt is when the pass's content last changed: the later of the
	// registration's and the event's updates.
	UpdatedAt time.Time
}

// Config configures a Service.
type Config struct {
	Apple        apple.Config
	GoogleIssuer string
	GoogleKey    string
	// BaseURL is the service's public base URL: Apple's web service is
	// BaseURL + AppleWebServicePath, Google's origins the base's.
	BaseURL string
	// IssuerName is shown on a Google pass (default "ticketd").
	IssuerName string
	// Secret derives each Apple pass's authentication token (the hosted
	// pages' secret: the same on every node).
	Secret func() []byte
	Store  *persistence.Store
	// Lookup reads a registration of an event as a Ticket; ErrNotFound
	// when there is none. The hosted pages set it (SetLookup) before the
	// server serves: they read events the way every page does.
	Lookup func(eventID, registrationID string) (Ticket, error)
	// Pusher and Updater reach Apple and Google (nil: the real APNs and
	// Wallet API clients).
	Pusher  apple.Pusher
	Updater google.Updater
	Logger  *slog.Logger
	Now     func() time.Time
}

// AppleWebServicePath is the Apple web service's path under the base URL.
const AppleWebServicePath = "/pass/apple"

// Service is the wallets of the service.
type Service struct {
	cfg    Config
	apple  *apple.Signer
	google *google.Issuer
	log    *slog.Logger

	changes chan change
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	pending sync.WaitGroup
}

type change struct{ eventID, regID string }

// New loads the configured wallets; a bad configuration is refused here,
// at start, never at a buyer's request. With neither configured it still
// serves the PDF and reports no wallet.
func New(cfg Config) (*Service, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.IssuerName == "" {
		cfg.IssuerName = "ticketd"
	}
	s := &Service{cfg: cfg, log: cfg.Logger, changes: make(chan change, changesMax), stop: make(chan struct{}), done: make(chan struct{})}
	var errs []error
	if cfg.Apple.Configured() {
		if cfg.Apple.WebServiceURL == "" && cfg.BaseURL != "" {
			cfg.Apple.WebServiceURL = strings.TrimRight(cfg.BaseURL, "/") + AppleWebServicePath
		}
		signer, err := apple.Load(cfg.Apple, cfg.Now())
		if err != nil {
			errs = append(errs, err)
		}
		s.apple = signer
		if s.cfg.Pusher == nil && signer != nil {
			s.cfg.Pusher = apple.NewAPNs(signer, "", nil)
		}
	}
	if cfg.GoogleIssuer != "" || cfg.GoogleKey != "" {
		var origins []string
		if o := originOf(cfg.BaseURL); o != "" {
			origins = []string{o}
		}
		iss, err := google.Load(cfg.GoogleIssuer, cfg.GoogleKey, origins)
		if err != nil {
			errs = append(errs, err)
		}
		s.google = iss
		if s.cfg.Updater == nil && iss != nil {
			s.cfg.Updater = google.NewAPI(iss)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if (s.apple != nil || s.google != nil) && (cfg.Store == nil || cfg.Secret == nil) {
		return nil, errors.New("wallet: Store and Secret are required with a wallet configured")
	}
	go s.run()
	return s, nil
}

func originOf(base string) string {
	i := strings.Index(base, "://")
	if i < 0 {
		return ""
	}
	if j := strings.IndexByte(base[i+3:], '/'); j >= 0 {
		return base[:i+3+j]
	}
	return base
}

// SetLookup sets Config.Lookup; call it before the service is used.
func (s *Service) SetLookup(f func(eventID, registrationID string) (Ticket, error)) {
	s.cfg.Lookup = f
}

// Apple and Google report which wallets are configured.
func (s *Service) Apple() bool  { return s != nil && s.apple != nil }
func (s *Service) Google() bool { return s != nil && s.google != nil }

// Describe says what each configured wallet is, for the operator: the
// pass type, team and certificate expiry; the issuer and service account.
// Never a key. "" for a wallet not configured.
func (s *Service) Describe() (appleDetail, googleDetail string) {
	if s == nil {
		return "", ""
	}
	if s.apple != nil {
		appleDetail = fmt.Sprintf("pass type %s, team %s, certificate valid until %s", s.apple.PassTypeID(), s.cfg.Apple.TeamID,
			s.apple.Certificate().NotAfter.UTC().Format(time.DateOnly))
	}
	if s.google != nil {
		googleDetail = fmt.Sprintf("issuer %s, service account %s", s.google.IssuerID(), s.google.Key().ClientEmail)
	}
	return appleDetail, googleDetail
}

// Close stops the change worker.
func (s *Service) Close() {
	s.once.Do(func() { close(s.stop) })
	<-s.done
}

// Serial is t's pass serial (see the package documentation).
func Serial(t Ticket) string {
	sum := sha256.Sum256([]byte(t.PassToken))
	return t.EventID + "." + t.RegistrationID + "." + hex.EncodeToString(sum[:4])
}

var serialRe = regexp.MustCompile(`^([A-Za-z0-9_-]{1,100})\.([A-Za-z0-9_-]{1,100})\.([0-9a-f]{8})$`)

// parseSerial splits a serial into its event and registration.
func parseSerial(serial string) (eventID, regID string, ok bool) {
	m := serialRe.FindStringSubmatch(serial)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// current reads the ticket a serial names; stale is true when the pass
// was rotated since (the serial's tag is no longer the ticket's).
func (s *Service) current(serial string) (t Ticket, stale bool, err error) {
	eventID, regID, ok := parseSerial(serial)
	if !ok {
		return Ticket{}, false, ErrNotFound
	}
	t, err = s.cfg.Lookup(eventID, regID)
	if err != nil {
		return Ticket{}, false, err
	}
	return t, Serial(t) != serial, nil
}

// PKPass is t's signed Apple Wallet pass.
func (s *Service) PKPass(t Ticket) ([]byte, error) {
	if s.apple == nil {
		return nil, ErrNotFound
	}
	return s.apple.Build(s.applePass(t, Serial(t), false))
}

func (s *Service) applePass(t Ticket, serial string, stale bool) apple.Pass {
	p := apple.Pass{Serial: serial, AuthToken: apple.AuthToken(s.cfg.Secret(), serial), EventName: t.EventName,
		StartsAt: t.StartsAt, Timezone: t.Timezone, Venue: t.Venue, Address: t.Address, Attendee: t.Attendee,
		TicketType: t.TicketType, CheckinCode: t.CheckinCode, PassURL: t.PassURL, Voided: stale || !t.Admits}
	if stale {
		// A rotated pass's link is the one that leaked: not on the pass.
		p.PassURL = ""
	}
	return p
}

// GoogleSaveURL is t's Save to Google Wallet link. The pass is noted, so
// a later cancellation or rotation marks its object invalid.
func (s *Service) GoogleSaveURL(t Ticket) (string, error) {
	if s.google == nil {
		return "", ErrNotFound
	}
	serial := Serial(t)
	link, err := s.google.SaveURL(google.Ticket{EventID: t.EventID, Serial: serial, EventName: t.EventName, StartsAt: t.StartsAt,
		EndsAt: t.EndsAt, Timezone: t.Timezone, Venue: t.Venue, Address: t.Address, Attendee: t.Attendee, TicketType: t.TicketType,
		CheckinCode: t.CheckinCode}, s.cfg.IssuerName)
	if err != nil {
		return "", err
	}
	if _, found, err := s.cfg.Store.Get([]byte(persistence.PrefixWalletGoogle + serial)); err == nil && !found {
		b := s.cfg.Store.NewBatch()
		defer b.Close()
		b.Put([]byte(persistence.PrefixWalletGoogle+serial), nil)
		if err := s.cfg.Store.Commit(b); err != nil {
			return "", fmt.Errorf("wallet: note google pass: %w", err)
		}
	}
	return link, nil
}

// authorize checks a web service call on serial of passType.
func (s *Service) authorize(passType, serial, auth string) error {
	if s.apple == nil || passType != s.apple.PassTypeID() {
		return ErrNotFound
	}
	if _, _, ok := parseSerial(serial); !ok {
		return ErrNotFound
	}
	if !apple.CheckAuth(s.cfg.Secret(), serial, auth) {
		return ErrUnauthorized
	}
	return nil
}

var deviceRe = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// Register records that device holds the pass serial and takes pushes at
// pushToken. created is false when it was registered already.
func (s *Service) Register(device, passType, serial, auth, pushToken string) (created bool, err error) {
	if err := s.authorize(passType, serial, auth); err != nil {
		return false, err
	}
	if !deviceRe.MatchString(device) || pushToken == "" || len(pushToken) > pushTokenMax || strings.ContainsAny(pushToken, "/\x00") {
		return false, ErrInvalid
	}
	if _, _, err := s.current(serial); err != nil {
		return false, err
	}
	devKey := []byte(persistence.PrefixWalletDevice + device + "/" + serial)
	old, found, err := s.cfg.Store.Get(devKey)
	if err != nil {
		return false, err
	}
	if found && string(old) == pushToken {
		return false, nil
	}
	if !found {
		if n, err := s.count(persistence.PrefixWalletDevice + device + "/"); err != nil || n >= devicePassesMax {
			return false, errors.Join(err, ErrTooMany)
		}
		if n, err := s.count(persistence.PrefixWalletPass + serial + "/"); err != nil || n >= passDevicesMax {
			return false, errors.Join(err, ErrTooMany)
		}
	}
	b := s.cfg.Store.NewBatch()
	defer b.Close()
	b.Put(devKey, []byte(pushToken))
	b.Put([]byte(persistence.PrefixWalletPass+serial+"/"+device), []byte(pushToken))
	if err := s.cfg.Store.Commit(b); err != nil {
		return false, fmt.Errorf("wallet: register: %w", err)
	}
	return !found, nil
}

// Unregister forgets that device holds serial.
func (s *Service) Unregister(device, passType, serial, auth string) error {
	if err := s.authorize(passType, serial, auth); err != nil {
		return err
	}
	if !deviceRe.MatchString(device) {
		return ErrNotFound
	}
	if _, found, err := s.cfg.Store.Get([]byte(persistence.PrefixWalletDevice + device + "/" + serial)); err != nil || !found {
		return errors.Join(err, ErrNotFound)
	}
	return s.forget(device, serial)
}

func (s *Service) forget(device, serial string) error {
	b := s.cfg.Store.NewBatch()
	defer b.Close()
	b.Delete([]byte(persistence.PrefixWalletDevice + device + "/" + serial))
	b.Delete([]byte(persistence.PrefixWalletPass + serial + "/" + device))
	if err := s.cfg.Store.Commit(b); err != nil {
		return fmt.Errorf("wallet: unregister: %w", err)
	}
	return nil
}

func (s *Service) count(prefix string) (int, error) {
	n := 0
	err := s.cfg.Store.Scan([]byte(prefix), func(_, _ []byte) error { n++; return nil })
	return n, err
}

// Updated lists the serials of passType registered on device that
// changed after since (a tag this method answered before; "" for all),
// and the tag to ask with next time. No registration: ErrNotFound (Apple
// wants 204 then).
func (s *Service) Updated(device, passType, since string) (serials []string, lastUpdated string, err error) {
	if s.apple == nil || passType != s.apple.PassTypeID() || !deviceRe.MatchString(device) {
		return nil, "", ErrNotFound
	}
	var after int64
	if since != "" {
		if after, err = strconv.ParseInt(since, 10, 64); err != nil {
			return nil, "", ErrInvalid
		}
	}
	var all []string
	prefix := persistence.PrefixWalletDevice + device + "/"
	if err := s.cfg.Store.Scan([]byte(prefix), func(k, _ []byte) error {
		all = append(all, string(k[len(prefix):]))
		return nil
	}); err != nil {
		return nil, "", err
	}
	if len(all) == 0 {
		return nil, "", ErrNotFound
	}
	last := after
	for _, serial := range all {
		t, _, err := s.current(serial)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		at := t.UpdatedAt.UnixNano()
		if at > after {
			serials = append(serials, serial)
		}
		last = max(last, at)
	}
	sort.Strings(serials)
	return serials, strconv.FormatInt(last, 10), nil
}

// Latest is the pass serial as it is now: voided when its registration
// no longer admits or the pass was rotated since. modified is when its
// content last changed.
func (s *Service) Latest(passType, serial, auth string) (pkpass []byte, modified time.Time, err error) {
	if err := s.authorize(passType, serial, auth); err != nil {
		return nil, time.Time{}, err
	}
	t, stale, err := s.current(serial)
	if err != nil {
		return nil, time.Time{}, err
	}
	b, err := s.apple.Build(s.applePass(t, serial, stale))
	return b, t.UpdatedAt, err
}

// Changed says that registration regID of eventID changed (regID "":
// every pass of the event, the event itself changed). It returns at once;
// the worker pushes to the devices holding those passes and invalidates
// the Google objects that no longer admit.
func (s *Service) Changed(eventID, regID string) {
	if s == nil || (s.apple == nil && s.google == nil) {
		return
	}
	s.pending.Add(1)
	select {
	case s.changes <- change{eventID, regID}:
	default:
		s.pending.Done()
		s.log.Warn("wallet: change queue full; passes refresh when their holders ask", "event", eventID, "registration", regID)
	}
}

func (s *Service) run() {
	defer close(s.done)
	for {
		select {
		case <-s.stop:
			return
		case c := <-s.changes:
			s.apply(c)
			s.pending.Done()
		}
	}
}

// apply carries out what change c owes the wallets.
func (s *Service) apply(c change) {
	prefix := c.eventID + "."
	if c.regID != "" {
		prefix += c.regID + "."
	}
	ctx, cancel := context.WithTimeout(context.Background(), pushTimeout)
	defer cancel()
	if s.apple != nil {
		type reg struct{ serial, device, token string }
		var regs []reg
		p := []byte(persistence.PrefixWalletPass + prefix)
		_ = s.cfg.Store.Scan(p, func(k, v []byte) error {
			rest := string(k[len(persistence.PrefixWalletPass):])
			i := strings.LastIndexByte(rest, '/')
			regs = append(regs, reg{rest[:i], rest[i+1:], string(v)})
			return nil
		})
		for _, r := range regs {
			err := s.cfg.Pusher.Push(ctx, s.apple.PassTypeID(), r.token)
			switch {
			case errors.Is(err, apple.ErrUnregistered):
				_ = s.forget(r.device, r.serial)
			case err != nil:
				s.log.Warn("wallet: apns push failed", "serial", r.serial, "err", err)
			}
		}
	}
	if s.google != nil {
		var serials []string
		_ = s.cfg.Store.Scan([]byte(persistence.PrefixWalletGoogle+prefix), func(k, _ []byte) error {
			serials = append(serials, string(k[len(persistence.PrefixWalletGoogle):]))
			return nil
		})
		for _, serial := range serials {
			t, stale, err := s.current(serial)
			if err != nil && !errors.Is(err, ErrNotFound) {
				continue
			}
			if err == nil && !stale && t.Admits {
				continue // still good: an event change shows when Google next reads the class
			}
			if err := s.cfg.Updater.Invalidate(ctx, s.google.ObjectID(serial)); err != nil {
				s.log.Warn("wallet: google invalidate failed", "serial", serial, "err", err)
				continue
			}
			b := s.cfg.Store.NewBatch()
			b.Delete([]byte(persistence.PrefixWalletGoogle + serial))
			if err := s.cfg.Store.Commit(b); err != nil {
				s.log.Warn("wallet: google pass note not removed", "serial", serial, "err", err)
			}
			b.Close()
		}
	}
}

// Drain waits until the changes queued so far are carried out, at most
// timeout (tests).
func (s *Service) Drain(timeout time.Duration) bool {
	done := make(chan struct{})
	go func() { s.pending.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(timeout):
		return false
	}
}
