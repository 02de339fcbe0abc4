package webhooks

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"ticketd/ask"
	"ticketd/outbox"
	"ticketd/persistence"
)

// Defaults of Config.
const (
	DefaultBackoffMin    = 10 * time.Second
	DefaultBackoffMax    = time.Hour
	DefaultMaxAttempts   = 15
	DefaultDisableAfter  = 10
	DefaultRotationGrace = 24 * time.Hour
	DefaultTimeout       = 10 * time.Second
	DefaultPollInterval  = time.Second
	DefaultBatchMax      = 100
	DefaultLogMax        = 100
	DefaultConcurrency   = 8
	// TaskQueue is the outbox queue of deliveries (keys under
	// outbox.Prefix + TaskQueue).
	TaskQueue = "webhooks"
	// MaxEndpointsPerUnit bounds a unit's endpoints.
	MaxEndpointsPerUnit = 50
	// MaxEventTypes bounds an endpoint's subscriptions.
	MaxEventTypes = 20
	// shareTimeout bounds one shared write of an endpoint (cluster mode).
	shareTimeout = 10 * time.Second
	// SharedLogTTL is how long the cluster keeps a delivery log entry
	// (Share): a node that joins with an empty store lists the deliveries
	// of that long, each node keeping the newest LogMax per endpoint.
	SharedLogTTL = 7 * 24 * time.Hour
)

// Key prefixes; see the package documentation.
const (
	endpointPrefix = persistence.PrefixHookEndpoint
	// legacyTaskPrefix held deliveries before they moved to the outbox
	// queue TaskQueue; New carries them over.
	legacyTaskPrefix = persistence.PrefixHookTask
	logPrefix        = persistence.PrefixHookLog
)

// Errors of the endpoint operations.
var (
	ErrNotFound = errors.New("webhooks: endpoint not found")
	ErrInvalid  = errors.New("webhooks: invalid endpoint")
	ErrTooMany  = errors.New("webhooks: too many endpoints")
	// ErrNoDelivery: the endpoint has no such delivery in its log.
	ErrNoDelivery = errors.New("webhooks: delivery not found")
	// ErrNoPayload: the logged delivery predates stored bodies, so it
	// cannot be sent again.
	ErrNoPayload = errors.New("webhooks: the delivery's payload is not kept")
	// ErrDisabled: a disabled endpoint is sent nothing, not even a resend.
	ErrDisabled = errors.New("webhooks: endpoint disabled")
)

// Config configures a Service.
type Config struct {
	Logger *slog.Logger
	Now    func() time.Time
	// BackoffMin and BackoffMax bound the retry delay of a failed delivery.
	BackoffMin time.Duration
	BackoffMax time.Duration
	// MaxAttempts bounds the attempts of one delivery.
	MaxAttempts int
	// DisableAfter consecutive failed attempts disable an endpoint.
	DisableAfter int
	// RotationGrace is how long the previous secret still signs after a
	// rotation.
	RotationGrace time.Duration
	// Timeout bounds one POST.
	Timeout time.Duration
	// Concurrency bounds the endpoints delivered to at once; each endpoint
	// gets one POST at a time.
	Concurrency int
	// PollInterval is how often due retries are looked for.
	PollInterval time.Duration
	// BatchMax bounds the queue entries and tasks one round handles.
	BatchMax int
	// LogMax bounds the delivery log kept per endpoint.
	LogMax int
	// Client sends the POSTs (default: an http.Client with Timeout that
	// follows no redirects, uses no proxy and, unless AllowPrivate, dials
	// public addresses only). A Client given here keeps the checks made
	// before dialing (scheme, address literals) but not the dialer's.
	Client *http.Client
	// AllowPrivate lifts the destination rules of decisions §23 (https,
	// public addresses only) for development and tests
	// (TICKETD_WEBHOOK_ALLOW_PRIVATE): http to localhost and private,
	// loopback and link-local addresses are then taken and delivered to.
	AllowPrivate bool
	// Resolver looks up an endpoint's host at save (default
	// net.DefaultResolver).
	Resolver *net.Resolver
}

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.BackoffMin <= 0 {
		c.BackoffMin = DefaultBackoffMin
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = max(DefaultBackoffMax, c.BackoffMin)
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.DisableAfter <= 0 {
		c.DisableAfter = DefaultDisableAfter
	}
	if c.RotationGrace <= 0 {
		c.RotationGrace = DefaultRotationGrace
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.BatchMax <= 0 {
		c.BatchMax = DefaultBatchMax
	}
	if c.LogMax <= 0 {
		c.LogMax = DefaultLogMax
	}
	if c.Client == nil {
		c.Client = newClient(c.Timeout, c.AllowPrivate)
	}
	if c.Resolver == nil {
		c.Resolver = net.DefaultResolver
	}
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.BackoffMin > c.BackoffMax && c.BackoffMax > 0 {
		return errors.New("webhooks: backoff min above max")
	}
	if c.MaxAttempts > 100 {
		return errors.New("webhooks: max attempts above 100")
	}
	if c.Concurrency > 1000 {
		return errors.New("webhooks: concurrency above 1000")
	}
	if c.BatchMax > 10000 || c.LogMax > 10000 {
		return errors.New("webhooks: batch max or log max above 10000")
	}
	return nil
}

// Endpoint is a webhook endpoint's configuration as stored.
type Endpoint struct {
	V           int      `json:"v"`
	ID          string   `json:"id"`
	UnitID      string   `json:"unitId"`
	URL         string   `json:"url"`
	EventTypes  []string `json:"eventTypes"`
	Description string   `json:"description"`
	Enabled     bool     `json:"enabled"`
	// DisabledReason says why an endpoint is disabled ("" when enabled).
	DisabledReason      string    `json:"disabledReason"`
	ConsecutiveFailures int       `json:"consecutiveFailures"`
	Secret              string    `json:"secret"`
	PreviousSecret      string    `json:"previousSecret,omitempty"`
	PreviousUntil       time.Time `json:"previousUntil,omitzero"`
	CreatedAt           time.Time `json:"createdAt"`
	UpdatedAt           time.Time `json:"updatedAt"`
}

// Input is what a caller sets on an endpoint; nil fields of an update are
// left as they are.
type Input struct {
	URL         *string
	EventTypes  []string
	Description *string
}

// Delivery is one attempt in an endpoint's delivery log. ID is its log
// key's last part (what Resend takes), filled in when the log is read.
type Delivery struct {
	ID         string  `json:"id,omitempty"`
	EventID    string  `json:"eventId"`
	Type       string  `json:"type"`
	Attempt    int     `json:"attempt"`
	StatusCode int     `json:"statusCode"`
	LatencyMS  float64 `json:"latencyMs"`
	Error      string  `json:"error,omitempty"`
	// Refused: the attempt was not sent, its destination not being a
	// public address (decisions §23); Error says which.
	Refused   bool      `json:"refused,omitempty"`
	Succeeded bool      `json:"succeeded"`
	At        time.Time `json:"at"`
}

// logged is a delivery log entry as stored: the attempt and the body it
// sent, so that a delivery can be sent again with the same bytes.
type logged struct {
	Delivery
	Body json.RawMessage `json:"body,omitempty"`
}

// task is a pending delivery of one event to one endpoint. Its attempts
// are counted by the outbox queue; Attempts is read only from tasks
// stored before (legacyTaskPrefix).
type task struct {
	V        int             `json:"v"`
	Endpoint string          `json:"endpoint"`
	EventID  string          `json:"eventId"`
	Type     string          `json:"type"`
	Hook     string          `json:"hook"`
	Body     json.RawMessage `json:"body"`
	Attempts int             `json:"attempts,omitempty"`
}

// Service stores endpoint configuration and delivers the webhook queue.
type Service struct {
	cfg   Config
	store *persistence.Store
	unit  func(eventID string) (string, bool)
	// share, when set, writes endpoint changes on every node (Share);
	// shareAll and shareGet, when set, write an endpoint with the record
	// of the request that wrote it, all or nothing, and read a record
	// back (ShareRecords), for recordTTL.
	share     func(ctx context.Context, key, value []byte, ttl time.Duration) error
	shareAll  func(ctx context.Context, keys, values [][]byte, ttls []time.Duration) error
	shareGet  func(ctx context.Context, key []byte) ([]byte, bool, error)
	recordTTL time.Duration

	mu       sync.Mutex
	pmu      sync.Mutex      // the pending counts (pendingPrefix) and their commits, released
	released map[string]bool // events whose deliveries Release dropped (cluster mode)
	eps      map[string]*Endpoint
	logCount map[string]int // endpoint id -> delivery log entries stored
	logSeq   uint32

	// events is the queue the event actors write (InboxPrefix);
	// tasks the deliveries it fans out to, one per endpoint.
	events, tasks *outbox.Queue
	loop          *outbox.Loop
	workers       sync.WaitGroup

	// lmu guards lanes and busy: the delivery state of each endpoint.
	lmu   sync.Mutex
	lanes map[string]*lane
	busy  int // lanes with a worker
}

// New loads the endpoints from store. unitOf resolves an event's business
// unit for queue entries written before the unit was known (may be nil).
// Start it to deliver; without Start the endpoint operations still work.
func New(cfg Config, store *persistence.Store, unitOf func(eventID string) (string, bool)) (*Service, error) {
	if store == nil {
		return nil, errors.New("webhooks: no store")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	s := &Service{cfg: cfg, store: store, unit: unitOf, eps: map[string]*Endpoint{}, logCount: map[string]int{},
		lanes: map[string]*lane{}, released: map[string]bool{}}
	var err error
	if s.events, err = outbox.NewQueue(store, "hookfanout", InboxPrefix); err != nil {
		return nil, err
	}
	if s.tasks, err = outbox.NewQueue(store, TaskQueue, ""); err != nil {
		return nil, err
	}
	s.loop, err = outbox.NewLoop(outbox.LoopConfig{Name: "webhooks", Logger: cfg.Logger, BackoffMin: cfg.BackoffMin,
		BackoffMax: cfg.BackoffMax, Poll: cfg.PollInterval, Now: cfg.Now}, s.round)
	if err != nil {
		return nil, err
	}
	err = store.Scan([]byte(endpointPrefix), func(key, value []byte) error {
		if len(value) == 0 {
			return nil // deleted in cluster mode (Share)
		}
		var e Endpoint
		if err := json.Unmarshal(value, &e); err != nil {
			return fmt.Errorf("webhooks: decode endpoint %s: %w", key, err)
		}
		s.eps[e.ID] = &e
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = store.Scan([]byte(logPrefix), func(key, _ []byte) error {
		ep, _, _ := strings.Cut(strings.TrimPrefix(string(key), logPrefix), "/")
		s.logCount[ep]++
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := s.migrateTasks(); err != nil {
		return nil, err
	}
	return s, nil
}

// Share makes endpoint changes go through put instead of this node's
// store: put must store key = value on a majority of the nodes and then,
// within moments, in every node's store, calling EndpointChanged on each
// (cluster mode: the shared index), so an endpoint made through any node
// is delivered to by the node that owns the event. A deletion is put as
// an empty value (the shared index never deletes). Call it before the
// service is used.
func (s *Service) Share(put func(ctx context.Context, key, value []byte, ttl time.Duration) error) {
	s.share = put
}

// ShareRecords makes a keyed endpoint write (CreateRecorded) in cluster mode put
// the endpoint and its request's Idempotency-Key record through putAll,
// which stores every pair on a majority of the nodes, all of them or none
// (the shared index's atomic batch), the record kept for ttl; and look for
// a record through get (the shared index, read from its leader) before
// writing again (decisions §20: the key commits with the write on
// JetStream too). Without it, a keyed write in cluster mode puts the
// endpoint alone, and the request's answer is stored after it. Call it
// with Share, before the service is used.
func (s *Service) ShareRecords(putAll func(ctx context.Context, keys, values [][]byte, ttls []time.Duration) error,
	get func(ctx context.Context, key []byte) ([]byte, bool, error), ttl time.Duration) {
	s.shareAll, s.shareGet, s.recordTTL = putAll, get, ttl
}

// EndpointChanged applies an endpoint entry that put (Share) copied into
// this node's store, whichever node wrote it, to the in-memory view; other
// keys are ignored. Entries arrive in the order they were put, so the
// last one wins everywhere.
func (s *Service) EndpointChanged(key, value []byte) {
	id, ok := strings.CutPrefix(string(key), endpointPrefix)
	if !ok || id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(value) == 0 {
		delete(s.eps, id)
		delete(s.logCount, id)
		// The delivery log goes with the endpoint on every node, as on
		// the node it was deleted through.
		if err := s.trimLogLocked(id, 0); err != nil {
			s.cfg.Logger.Warn("webhooks: delivery log of a deleted endpoint not dropped", "endpoint", id, "err", err)
		}
		return
	}
	var e Endpoint
	if err := json.Unmarshal(value, &e); err != nil || e.ID != id {
		s.cfg.Logger.Warn("webhooks: shared endpoint not decoded", "endpoint", id, "err", err)
		return
	}
	s.eps[id] = &e
}

// DeliveryChanged applies a delivery log entry that put (Share) copied
// into this node's store, whichever node delivered it: the endpoint's log
// here is trimmed to its newest LogMax entries, by the same rule as on
// the node that delivered; other keys are ignored.
func (s *Service) DeliveryChanged(key, _ []byte) {
	rest, ok := strings.CutPrefix(string(key), logPrefix)
	if !ok {
		return
	}
	ep, _, _ := strings.Cut(rest, "/")
	if ep == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.trimLogLocked(ep, s.cfg.LogMax); err != nil {
		s.cfg.Logger.Warn("webhooks: delivery log not trimmed", "endpoint", ep, "err", err)
	}
}

// trimLogLocked keeps the newest max entries of endpoint's delivery log in
// this node's store and recounts it; s.mu must be held.
func (s *Service) trimLogLocked(endpoint string, max int) error {
	keys, err := s.logKeys(endpoint, -1)
	if err != nil {
		return err
	}
	if over := len(keys) - max; over > 0 {
		bt := s.store.NewBatch()
		defer bt.Close()
		for _, k := range keys[:over] {
			bt.Delete(k)
		}
		if err := s.store.Commit(bt); err != nil {
			return fmt.Errorf("webhooks: trim delivery log of %s: %w", endpoint, err)
		}
		keys = keys[over:]
	}
	if _, ok := s.eps[endpoint]; ok {
		s.logCount[endpoint] = len(keys)
	}
	return nil
}

// Start starts delivery.
func (s *Service) Start() { s.loop.Start() }

// Close stops delivery and waits for the POSTs in flight (they are
// cancelled). Undelivered events stay queued.
func (s *Service) Close() error {
	err := s.loop.Close()
	s.workers.Wait()
	return err
}

// Wake asks for a round soon. It never blocks.
func (s *Service) Wake() { s.loop.Wake() }

func newSecret() string {
	var b [24]byte
	_, _ = crand.Read(b[:])
	return "whsec_" + hex.EncodeToString(b[:])
}

func newID() string {
	var b [10]byte
	_, _ = crand.Read(b[:])
	return "we_" + hex.EncodeToString(b[:])
}

// checkInput validates the fields set in in.
func (s *Service) checkInput(in Input) error {
	if in.URL != nil {
		u, err := url.Parse(*in.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(*in.URL) > 2048 {
			return fmt.Errorf("%w: url: must be an absolute https url", ErrInvalid)
		}
		if err := s.checkDestination(*in.URL); err != nil {
			return err
		}
	}
	if in.EventTypes != nil {
		if len(in.EventTypes) == 0 || len(in.EventTypes) > MaxEventTypes {
			return fmt.Errorf("%w: eventTypes: must list 1 to %d event types", ErrInvalid, MaxEventTypes)
		}
		for _, t := range in.EventTypes {
			if !slices.Contains(HookTypes(), t) {
				return fmt.Errorf("%w: eventTypes: unknown event type %q; known: %s", ErrInvalid, t,
					strings.Join(HookTypes(), ", "))
			}
		}
	}
	if in.Description != nil && len(*in.Description) > 500 {
		return fmt.Errorf("%w: description: at most 500 characters", ErrInvalid)
	}
	return nil
}

// save commits e with rec's record of it (see CreateRecorded); s.mu must
// be held.
func (s *Service) save(e *Endpoint, rec *ask.Recorder) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("webhooks: encode endpoint: %w", err)
	}
	var rk, rv []byte
	if rec != nil && rec.Key != nil && rec.Value != nil {
		if v := rec.Value(*e); v != nil {
			rk, rv = rec.Key, v
		}
	}
	if s.share != nil {
		if rk != nil && s.shareAll != nil {
			return s.putSharedRecorded(e.ID, b, rk, rv)
		}
		// Without ShareRecords the request's answer is stored after
		// the endpoint, by the pipeline.
		return s.putShared(e.ID, b)
	}
	bt := s.store.NewBatch()
	defer bt.Close()
	bt.Put([]byte(endpointPrefix+e.ID), b)
	if rk != nil {
		bt.Put(rk, rv)
	}
	if err := s.store.Commit(bt); err != nil {
		return fmt.Errorf("webhooks: save endpoint %s: %w", e.ID, err)
	}
	return nil
}

// putShared writes endpoint id's value (empty: deleted) through Share;
// this node's store gets it from the shared copy.
func (s *Service) putShared(id string, value []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), shareTimeout)
	defer cancel()
	if err := s.share(ctx, []byte(endpointPrefix+id), value, 0); err != nil {
		return fmt.Errorf("webhooks: share endpoint %s: %w", id, err)
	}
	return nil
}

// putSharedRecorded puts endpoint id's value and the record rk = rv of
// the request that wrote it through ShareRecords' putAll: both or neither.
func (s *Service) putSharedRecorded(id string, value, rk, rv []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), shareTimeout)
	defer cancel()
	err := s.shareAll(ctx, [][]byte{[]byte(endpointPrefix + id), rk}, [][]byte{value, rv}, []time.Duration{0, s.recordTTL})
	if err != nil {
		return fmt.Errorf("webhooks: share endpoint %s: %w", id, err)
	}
	return nil
}

// made looks for the record of rec's request when its key was claimed
// before (rec.Look): found and live, the write was made before (its
// answer lost to a crash, a timeout or a failover) and it answers
// *ask.Replayed with the record; nil when there is none to look for or
// none found. It reads this node's store, or in cluster mode the shared
// index (ShareRecords), where the record was put with the endpoint.
func (s *Service) made(rec *ask.Recorder) error {
	return s.madeIn(rec, s.share != nil && s.shareGet != nil)
}

// madeIn is made reading the shared index (shared) or this node's store
// (where the records of writes to this node's own queue are: Resend,
// Replay).
func (s *Service) madeIn(rec *ask.Recorder, shared bool) error {
	if rec == nil || !rec.Look || rec.Key == nil {
		return nil
	}
	var (
		v   []byte
		ok  bool
		err error
	)
	if shared {
		ctx, cancel := context.WithTimeout(context.Background(), shareTimeout)
		v, ok, err = s.shareGet(ctx, rec.Key)
		cancel()
	} else {
		v, ok, err = s.store.Get(rec.Key)
	}
	if err != nil {
		return fmt.Errorf("webhooks: read the request's record: %w", err)
	}
	if ok && len(v) > 0 && (rec.Live == nil || rec.Live(v)) {
		return &ask.Replayed{Value: v}
	}
	return nil
}

// Create adds an endpoint to unitID, enabled, with a new secret (returned
// here; callers show it once).
func (s *Service) Create(unitID string, in Input) (Endpoint, error) {
	return s.CreateRecorded(unitID, in, nil)
}

// CreateRecorded is Create for a request with an Idempotency-Key: rec
// (nil: none) is its record, whose Value is called with the Endpoint
// written. The record commits in the endpoint's own batch on a single
// node, and in cluster mode in one atomic put with it (ShareRecords), so
// a retried request whose answer was lost finds it (rec.Look) and is
// answered with it (*ask.Replayed) instead of making a second endpoint
// (decisions §20). RotateSecretRecorded and SetEnabledRecorded do the same.
func (s *Service) CreateRecorded(unitID string, in Input, rec *ask.Recorder) (Endpoint, error) {
	if in.URL == nil || in.EventTypes == nil {
		return Endpoint{}, fmt.Errorf("%w: url and eventTypes are required", ErrInvalid)
	}
	if err := s.checkInput(in); err != nil {
		return Endpoint{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.made(rec); err != nil {
		return Endpoint{}, err
	}
	n := 0
	for _, e := range s.eps {
		if e.UnitID == unitID {
			n++
		}
	}
	if n >= MaxEndpointsPerUnit {
		return Endpoint{}, ErrTooMany
	}
	now := s.cfg.Now().UTC()
	e := &Endpoint{V: 1, ID: newID(), UnitID: unitID, URL: *in.URL, EventTypes: slices.Clone(in.EventTypes),
		Enabled: true, Secret: newSecret(), CreatedAt: now, UpdatedAt: now}
	if in.Description != nil {
		e.Description = *in.Description
	}
	if err := s.save(e, rec); err != nil {
		return Endpoint{}, err
	}
	s.eps[e.ID] = e
	return *e, nil
}

// get returns unitID's endpoint id; s.mu must be held.
func (s *Service) get(unitID, id string) (*Endpoint, error) {
	e, ok := s.eps[id]
	if !ok || e.UnitID != unitID {
		return nil, ErrNotFound
	}
	return e, nil
}

// Get returns unitID's endpoint id; another unit's endpoint is not found.
func (s *Service) Get(unitID, id string) (Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.get(unitID, id)
	if err != nil {
		return Endpoint{}, err
	}
	return *e, nil
}

// Subscribed reports whether unitID has an enabled endpoint for event type
// typ. The event actors ask it before queueing a webhook event, so units
// without endpoints pay nothing for webhooks. Events that happen while no
// endpoint is subscribed are not delivered to endpoints created later.
func (s *Service) Subscribed(unitID, typ string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.eps {
		if e.UnitID == unitID && e.Enabled && slices.Contains(e.EventTypes, typ) {
			return true
		}
	}
	return false
}

// List returns unitID's endpoints, oldest first.
func (s *Service) List(unitID string) []Endpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []Endpoint{}
	for _, e := range s.eps {
		if e.UnitID == unitID {
			out = append(out, *e)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// update applies fn to a copy of the endpoint and commits it (with rec's
// record, when set).
func (s *Service) update(unitID, id string, rec *ask.Recorder, fn func(e *Endpoint)) (Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.made(rec); err != nil {
		return Endpoint{}, err
	}
	cur, err := s.get(unitID, id)
	if err != nil {
		return Endpoint{}, err
	}
	e := *cur
	e.EventTypes = slices.Clone(cur.EventTypes)
	fn(&e)
	e.UpdatedAt = s.cfg.Now().UTC()
	if err := s.save(&e, rec); err != nil {
		return Endpoint{}, err
	}
	s.eps[id] = &e
	return e, nil
}

// Update changes the fields set in in.
func (s *Service) Update(unitID, id string, in Input) (Endpoint, error) {
	if err := s.checkInput(in); err != nil {
		return Endpoint{}, err
	}
	return s.update(unitID, id, nil, func(e *Endpoint) {
		if in.URL != nil {
			e.URL = *in.URL
		}
		if in.EventTypes != nil {
			e.EventTypes = slices.Clone(in.EventTypes)
		}
		if in.Description != nil {
			e.Description = *in.Description
		}
	})
}

// SetEnabled enables or disables an endpoint; enabling resets its failure
// count.
func (s *Service) SetEnabled(unitID, id string, on bool) (Endpoint, error) {
	return s.SetEnabledRecorded(unitID, id, on, nil)
}

// SetEnabledRecorded is SetEnabled committing rec's record with the
// endpoint.
func (s *Service) SetEnabledRecorded(unitID, id string, on bool, rec *ask.Recorder) (Endpoint, error) {
	return s.update(unitID, id, rec, func(e *Endpoint) {
		e.Enabled = on
		e.ConsecutiveFailures = 0
		e.DisabledReason = ""
		if !on {
			e.DisabledReason = "disabled by an operator"
		}
	})
}

// RotateSecret gives an endpoint a new secret; the old one keeps signing
// (as a second v1) for Config.RotationGrace.
func (s *Service) RotateSecret(unitID, id string) (Endpoint, error) {
	return s.RotateSecretRecorded(unitID, id, nil)
}

// RotateSecretRecorded is RotateSecret committing rec's record with the
// endpoint (see CreateRecorded): a retried rotation whose answer was lost
// answers the secret it made instead of rotating again.
func (s *Service) RotateSecretRecorded(unitID, id string, rec *ask.Recorder) (Endpoint, error) {
	return s.update(unitID, id, rec, func(e *Endpoint) {
		e.PreviousSecret = e.Secret
		e.PreviousUntil = s.cfg.Now().UTC().Add(s.cfg.RotationGrace)
		e.Secret = newSecret()
	})
}

// Delete removes an endpoint; its pending deliveries are dropped when due.
func (s *Service) Delete(unitID, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.get(unitID, id); err != nil {
		return err
	}
	logKeys, err := s.logKeys(id, -1)
	if err != nil {
		return err
	}
	if s.share != nil {
		// The endpoint goes on every node first: a delivery log left
		// behind by a failure here is only listed with its endpoint.
		if err := s.putShared(id, nil); err != nil {
			return err
		}
	}
	bt := s.store.NewBatch()
	defer bt.Close()
	if s.share == nil {
		bt.Delete([]byte(endpointPrefix + id))
	}
	for _, k := range logKeys {
		bt.Delete(k)
	}
	if err := s.store.Commit(bt); err != nil {
		return fmt.Errorf("webhooks: delete endpoint %s: %w", id, err)
	}
	delete(s.eps, id)
	delete(s.logCount, id)
	return nil
}

// Deliveries returns an endpoint's delivery log, newest first.
func (s *Service) Deliveries(unitID, id string) ([]Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.get(unitID, id); err != nil {
		return nil, err
	}
	out := []Delivery{}
	prefix := logPrefix + id + "/"
	err := s.store.Scan([]byte(prefix), func(key, value []byte) error {
		var d logged
		if err := json.Unmarshal(value, &d); err != nil {
			return fmt.Errorf("webhooks: decode delivery %s: %w", key, err)
		}
		d.Delivery.ID = strings.TrimPrefix(string(key), prefix)
		out = append(out, d.Delivery)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Reverse(out)
	return out, nil
}

// Resend queues the body of unitID's endpoint's logged delivery again as
// a new task: the same bytes and event id (receivers deduplicate by it),
// delivered, retried and logged like any other. It returns the task's id.
func (s *Service) Resend(unitID, endpointID, deliveryID string) (string, Delivery, error) {
	return s.ResendRecorded(unitID, endpointID, deliveryID, nil)
}

// Resent is what ResendRecorded's record is made from: the queued task's
// id and the delivery sent again.
type Resent struct {
	ID       string
	Delivery Delivery
}

// ResendRecorded is Resend for a request with an Idempotency-Key: rec
// (nil: none) is its record, made from a Resent and committed in the
// batch that queues the task, so a retry whose answer was lost is
// answered with it (*ask.Replayed) instead of queueing a second delivery
// (decisions §20). The task and the record are in this node's store, in
// cluster mode too, and only it looks for the record.
func (s *Service) ResendRecorded(unitID, endpointID, deliveryID string, rec *ask.Recorder) (string, Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.madeIn(rec, false); err != nil {
		return "", Delivery{}, err
	}
	ep, err := s.get(unitID, endpointID)
	if err != nil {
		return "", Delivery{}, err
	}
	if deliveryID == "" || strings.ContainsAny(deliveryID, "/") {
		return "", Delivery{}, ErrNoDelivery
	}
	v, ok, err := s.store.Get([]byte(logPrefix + endpointID + "/" + deliveryID))
	if err != nil {
		return "", Delivery{}, fmt.Errorf("webhooks: read delivery %s: %w", deliveryID, err)
	}
	if !ok {
		return "", Delivery{}, ErrNoDelivery
	}
	var d logged
	if err := json.Unmarshal(v, &d); err != nil {
		return "", Delivery{}, fmt.Errorf("webhooks: decode delivery %s: %w", deliveryID, err)
	}
	d.Delivery.ID = deliveryID
	if len(d.Body) == 0 {
		return "", d.Delivery, ErrNoPayload
	}
	if !ep.Enabled {
		return "", d.Delivery, ErrDisabled
	}
	hook := "resend-" + newID()
	tb, err := json.Marshal(task{V: 1, Endpoint: endpointID, EventID: d.EventID, Type: d.Type, Hook: hook, Body: d.Body})
	if err != nil {
		return "", Delivery{}, fmt.Errorf("webhooks: encode task: %w", err)
	}
	bt := s.store.NewBatch()
	defer bt.Close()
	id := endpointID + "/" + hook
	if err := s.tasks.Add(bt, outbox.Entry{ID: id, Value: tb, NextAt: s.cfg.Now()}); err != nil {
		return "", Delivery{}, err
	}
	putRecord(bt, rec, Resent{ID: id, Delivery: d.Delivery})
	if err := s.store.Commit(bt); err != nil {
		return "", Delivery{}, fmt.Errorf("webhooks: queue resend of %s: %w", deliveryID, err)
	}
	s.loop.Wake()
	return id, d.Delivery, nil
}

// putRecord puts rec's record of result (nil rec or value: nothing) in b.
func putRecord(b *persistence.Batch, rec *ask.Recorder, result any) {
	if rec == nil || rec.Key == nil || rec.Value == nil {
		return
	}
	if v := rec.Value(result); v != nil {
		b.Put(rec.Key, v)
	}
}

// logKeys returns the oldest n keys of endpoint's delivery log (n < 0:
// all of them).
func (s *Service) logKeys(endpoint string, n int) ([][]byte, error) {
	var out [][]byte
	err := s.store.Scan([]byte(logPrefix+endpoint+"/"), func(key, _ []byte) error {
		if n >= 0 && len(out) == n {
			return errFull
		}
		out = append(out, append([]byte(nil), key...))
		return nil
	})
	if err != nil && !errors.Is(err, errFull) {
		return nil, err
	}
	return out, nil
}

// ReplayFrom chooses the logged deliveries Replay sends again: those of
// event EventID (a ticketed event's id) whose change feed seq is Seq or
// later, or, with Seq 0, those whose change happened at Since or later
// (of every event, unless EventID is set).
type ReplayFrom struct {
	EventID string
	Seq     uint64
	Since   time.Time
}

// ErrReplayFrom reports a ReplayFrom that names no starting point.
var ErrReplayFrom = errors.New("webhooks: replay needs a seq with its event, or a time")

// Replay queues again, oldest first, every webhook event in the
// endpoint's delivery log that from chooses: each once (by its webhook
// event id, with the body of its newest logged attempt), as Resend does,
// so receivers deduplicate by the id. It answers the queue ids. The log
// keeps the newest Config.LogMax attempts of an endpoint, which bounds
// how far back a replay reaches; the change feed reaches further.
func (s *Service) Replay(unitID, endpointID string, from ReplayFrom) ([]string, error) {
	return s.ReplayRecorded(unitID, endpointID, from, nil)
}

// ReplayRecorded is Replay for a request with an Idempotency-Key: rec
// (nil: none) is its record, made from the queue ids ([]string) and
// committed in the batch that queues them, as ResendRecorded does. A
// replay that queues nothing commits nothing.
func (s *Service) ReplayRecorded(unitID, endpointID string, from ReplayFrom, rec *ask.Recorder) ([]string, error) {
	if (from.Seq == 0 && from.Since.IsZero()) || (from.Seq > 0 && from.EventID == "") {
		return nil, ErrReplayFrom
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.madeIn(rec, false); err != nil {
		return nil, err
	}
	ep, err := s.get(unitID, endpointID)
	if err != nil {
		return nil, err
	}
	if !ep.Enabled {
		return nil, ErrDisabled
	}
	type pick struct {
		body []byte
		typ  string
		wh   string
	}
	var order []string
	picked := map[string]pick{}
	prefix := logPrefix + endpointID + "/"
	err = s.store.Scan([]byte(prefix), func(key, value []byte) error {
		var d logged
		if err := json.Unmarshal(value, &d); err != nil || len(d.Body) == 0 {
			return nil // a broken or body-less entry cannot be sent again
		}
		var b body
		if err := json.Unmarshal(d.Body, &b); err != nil {
			return nil
		}
		if from.EventID != "" && b.EventID != from.EventID {
			return nil
		}
		if from.Seq > 0 && b.Seq < from.Seq {
			return nil
		}
		if from.Seq == 0 && b.CreatedAt.Before(from.Since) {
			return nil
		}
		if _, seen := picked[b.ID]; !seen {
			order = append(order, b.ID)
		}
		picked[b.ID] = pick{body: append([]byte(nil), d.Body...), typ: d.Type, wh: d.EventID}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("webhooks: read the delivery log of %s: %w", endpointID, err)
	}
	if len(order) == 0 {
		return []string{}, nil
	}
	bt := s.store.NewBatch()
	defer bt.Close()
	now := s.cfg.Now()
	ids := make([]string, 0, len(order))
	for i, whID := range order {
		p := picked[whID]
		hook := "replay-" + newID()
		tb, err := json.Marshal(task{V: 1, Endpoint: endpointID, EventID: p.wh, Type: p.typ, Hook: hook, Body: p.body})
		if err != nil {
			return nil, fmt.Errorf("webhooks: encode task: %w", err)
		}
		id := endpointID + "/" + hook
		// Due one after another, so the lane sends them in log order.
		if err := s.tasks.Add(bt, outbox.Entry{ID: id, Value: tb, NextAt: now.Add(time.Duration(i) * time.Microsecond)}); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	putRecord(bt, rec, ids)
	if err := s.store.Commit(bt); err != nil {
		return nil, fmt.Errorf("webhooks: queue replay of %s: %w", endpointID, err)
	}
	s.loop.Wake()
	return ids, nil
}
