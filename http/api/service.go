package api

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ticketd/ask"
	"ticketd/audit"
	"ticketd/directory"
	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/http/devlog"
	"ticketd/http/instrument"
	"ticketd/http/openapi"
	"ticketd/http/pages"
	"ticketd/http/payprovider"
	"ticketd/ops"
	"ticketd/payments"
	"ticketd/payments/stripe"
	"ticketd/wallet"
	"ticketd/webhooks"
)

// Deps are the parts of the service the endpoints talk to; app.Main
// builds every one of them (api.New builds none).
type Deps struct {
	// Ops is the application layer: every operation the endpoints ask,
	// and the services that carry out owed work (audit, refunds, the
	// sandbox, mail, webhooks, the hosted-payment saga).
	Ops *ops.Ops
	// PagesSecret signs the hosted pages' email-gate cookies (HMAC-SHA256).
	// Empty: a random secret per process, so devices are asked again after
	// a restart.
	PagesSecret string
	// PagesSharedSecret, when set, is the cluster's pages' cookie secret
	// (pages.Config.SharedSecret).
	PagesSharedSecret func() []byte
	// DevLog is the developer log.
	DevLog *devlog.Log
	// Stripe is the payment provider of paid orders when set
	// (TICKETD_PAYMENT_PROVIDER=stripe): its webhook settles them
	// (http/payprovider); Ops.Hosted makes their payment pages.
	// Nil: the sandbox.
	Stripe *stripe.Provider
	// Cluster is the cluster this node belongs to (nil: a single node).
	Cluster Cluster
	// Wallet makes the buyer's PDF ticket and wallet passes (nil: the
	// PDF alone).
	Wallet *wallet.Service
}

// api holds the endpoint handlers (routes_*.go). Handlers are thin:
// authenticate (done by the server), decode, call the application layer,
// encode.
type api struct {
	cfg     thttp.Config
	deps    Deps
	ops     *ops.Ops
	srv     *thttp.Server
	refunds *payments.Refunds

	devlog   *devlog.Log
	auditLog *audit.Log
	hooks    *webhooks.Service
}

// New builds the whole HTTP service over deps: the route table of every
// surface, the OpenAPI documents and docs pages built from it, and the
// hosted pages.
func New(cfg thttp.Config, deps Deps) (*thttp.Server, error) {
	o := deps.Ops
	switch {
	case o == nil:
		return nil, errors.New("http: no application layer")
	case deps.DevLog == nil:
		return nil, errors.New("http: no developer log")
	case o.Audit() == nil || o.Sandbox() == nil || o.Refunds() == nil || o.Mail() == nil || o.Webhooks() == nil:
		return nil, errors.New("http: the application layer lacks a service (audit, sandbox, refunds, mail, webhooks)")
	case deps.Stripe != nil && (o.Hosted() == nil || o.Seen() == nil):
		return nil, errors.New("http: stripe without its saga or its record of events")
	}
	a := &api{cfg: cfg, deps: deps, ops: o, refunds: o.Refunds(),
		devlog: deps.DevLog, auditLog: o.Audit(), hooks: o.Webhooks()}
	srv, err := thttp.NewServer(cfg, newDirectoryAuth(o), a.routes())
	if err != nil {
		return nil, err
	}
	a.srv = srv
	if err := a.registerExtras(srv); err != nil {
		return nil, err
	}
	return srv, nil
}

// routes is the whole route table.
func (a *api) routes() []thttp.Route {
	var rs []thttp.Route
	rs = append(rs, a.developerRoutes()...)
	rs = append(rs, a.feedRoutes()...)
	rs = append(rs, a.commerceRoutes()...)
	rs = append(rs, a.storefrontRoutes()...)
	rs = append(rs, a.queueRoutes()...)
	rs = append(rs, a.adminRoutes()...)
	rs = append(rs, a.outboxRoutes()...)
	rs = append(rs, a.outboxRetryRoutes()...)
	rs = append(rs, a.locationRoutes()...)
	rs = append(rs, a.programRoutes()...)
	rs = append(rs, a.consoleLogRoutes()...)
	rs = append(rs, a.webhookRoutes()...)
	rs = append(rs, a.refundRoutes()...)
	rs = append(rs, a.consoleSalesRoutes()...)
	rs = append(rs, a.clusterRoutes()...)
	rs = append(rs, a.doorRoutes()...)
	return instrument.Routes(rs, a.ops)
}

// registerExtras adds what is not an API operation: the OpenAPI documents
// and docs pages, the hosted pages, the payment provider's page and webhook
// (http/payprovider).
func (a *api) registerExtras(srv *thttp.Server) error {
	pay, err := payprovider.New(payprovider.Config{Ops: a.ops, Stripe: a.deps.Stripe, Now: a.cfg.Now})
	if err != nil {
		return err
	}
	thttp.RegisterMetrics(srv, a.ops.Collector())
	thttp.RegisterHealth(srv, a.ops)
	devlog.Register(srv, a.devlog)
	if err := openapi.RegisterDocs(srv, srv.Routes(), openapi.DocInfo{Version: thttp.CurrentVersion, ServerURL: a.cfg.BaseURL, Webhooks: openapi.Webhooks()}); err != nil {
		return err
	}
	p, err := pages.New(pages.Config{BaseURL: a.cfg.BaseURL, TrustedProxies: a.cfg.TrustedProxies,
		Secret: a.deps.PagesSecret, SharedSecret: a.deps.PagesSharedSecret, Logger: srv.Logger(), Now: a.cfg.Now, Ops: a.ops,
		PaymentOrigins: pay.PageOrigins(), Wallet: a.deps.Wallet})
	if err != nil {
		return err
	}
	p.Register(srv)
	pay.Register(srv, p)
	return nil
}

func (a *api) now() time.Time {
	if a.cfg.Now != nil {
		return a.cfg.Now()
	}
	return time.Now()
}

// directoryAuth authenticates keys against the directory's read view.
// The Principal of a key is built once per view and shared by its
// requests (a Principal is read-only): a new view, after any key change,
// starts a new set, so a revocation is seen at once.
type directoryAuth struct {
	ops   *ops.Ops
	cache *atomic.Pointer[principalSet]
	wait  time.Duration // authSyncWait
}

// principalSet holds the Principals of one directory view.
type principalSet struct {
	view  *directory.State
	byKey sync.Map // *directory.Key (of view) -> *http.Principal
	// devices are the view's active devices by key hash (string of
	// directory.DeviceKeyHash), built by the first device request.
	devOnce sync.Once
	devices map[string]*deviceLocal
}

func newDirectoryAuth(o *ops.Ops) directoryAuth {
	return directoryAuth{ops: o, cache: new(atomic.Pointer[principalSet]), wait: ops.SyncWait}
}

// AuthenticateLocal looks token up in this node's view of the directory
// only (thttp.LocalAuthenticator): the server asks it first for an address
// out of failed authentications, so made-up keys cost no read of the
// directory's log.
func (d directoryAuth) AuthenticateLocal(token string, now time.Time) *thttp.Principal {
	if strings.HasPrefix(token, "dk_") {
		// A door device's key: in the same view, or a device sharing an
		// address (a venue's NAT) with someone out of failures would be
		// refused as they are (decisions §17: valid credentials are
		// served whatever their address did).
		h := directory.DeviceKeyHash(token)
		if e := d.deviceOf(d.ops.Directory(), token, &h); e != nil {
			return &e.p
		}
		return nil
	}
	k, ok := d.ops.Directory().Lookup(token)
	if !ok || !k.Active(now) {
		return nil
	}
	return principalOf(k)
}

func (d directoryAuth) Authenticate(token string, now time.Time) (*thttp.Principal, error) {
	if strings.HasPrefix(token, "dk_") {
		return d.authenticateDevice(token)
	}
	view := d.ops.Directory()
	k, ok := view.Lookup(token)
	if d.ops.DirectoryShared() && (!ok || d.ops.DirectoryStale()) {
		// Cluster mode: the key may have been made on another node a
		// moment ago, or the view may be too old to show a revocation:
		// read the directory's log, then look again. A read that fails
		// tells nothing: not a 401 but "cannot tell".
		if err := d.syncDirectory(); err != nil {
			return nil, err
		}
		view = d.ops.Directory()
		k, ok = view.Lookup(token)
	}
	if !ok || !k.Active(now) {
		return nil, nil
	}
	if d.cache == nil {
		return principalOf(k), nil
	}
	set := d.cache.Load()
	if set == nil || set.view != view {
		set = &principalSet{view: view}
		d.cache.Store(set)
	}
	if p, ok := set.byKey.Load(k); ok {
		return p.(*thttp.Principal), nil
	}
	p := principalOf(k)
	set.byKey.Store(k, p)
	return p, nil
}

// syncDirectory reads what other nodes added to the directory (cluster
// mode), waiting at most d.wait (ops.SyncDirectory).
func (d directoryAuth) syncDirectory() error { return d.ops.SyncDirectory(d.wait) }

// errDirectoryUnread answers a request about a business unit missing
// from this node's view when the directory's log could not be read: the
// unit may have been made on another node a moment ago.
var errDirectoryUnread = thttp.NewError(503, "this node cannot read the directory now, so it cannot tell whether the business unit exists; retry").
	WithReason(event.ReasonDirectoryUnavailable)

// unitKnown reports whether business unit id exists. In cluster mode a
// unit missing from the view may have been made on another node a moment
// ago: it reads the directory's log and looks again, and a read that
// fails is errDirectoryUnread, never a false "not found".
func (a *api) unitKnown(id string) (bool, error) {
	if _, ok := a.ops.Directory().Unit(id); ok || !a.ops.DirectoryShared() {
		return ok, nil
	}
	if err := a.ops.SyncDirectory(ops.SyncWait); err != nil {
		return false, errDirectoryUnread
	}
	_, ok := a.ops.Directory().Unit(id)
	return ok, nil
}

func principalOf(k *directory.Key) *thttp.Principal {
	return &thttp.Principal{KeyID: k.ID, UnitID: k.UnitID, Type: k.Type, Version: k.Version, Origins: k.Origins}
}

// OriginAllowed answers a storefront preflight. In cluster mode an origin
// missing from the view may be listed by a key made on another node a
// moment ago: it reads the directory's log and looks again (as
// Authenticate does for an unknown key); a read that fails answers no
// (the browser's call fails and is tried again), never an origin no key
// lists.
func (d directoryAuth) OriginAllowed(origin string) bool {
	if d.ops.Directory().OriginListed(origin, time.Now()) {
		return true
	}
	if !d.ops.DirectoryShared() || d.syncDirectory() != nil {
		return false
	}
	return d.ops.Directory().OriginListed(origin, time.Now())
}

// errEventNotFound is the one answer for a missing event and another
// business unit's event: they must be indistinguishable.
var errEventNotFound = &event.Error{Code: event.NotFound, Message: "event not found"}

// eventOf returns the path's event id if the caller's business unit owns it.
func (a *api) eventOf(c *thttp.Ctx) (string, error) {
	id := c.Param("eventId")
	unit, ok := a.ops.EventUnit(id)
	if !ok || unit != c.Principal().UnitID {
		return "", errEventNotFound
	}
	return id, nil
}

// contextBG is the context of actor requests: their deadline is the
// actor system's ask timeout, not the HTTP connection's.
var contextBG = context.Background()

// ask sends cmd to the event's actor through the application layer.
func (a *api) ask(eventID string, cmd event.Command) (any, error) {
	return a.ops.Ask(contextBG, eventID, cmd)
}

// askC is ask for request c: a write it makes commits c's
// Idempotency-Key with its changes (see keyed).
func (a *api) askC(c *thttp.Ctx, eventID string, cmd event.Command) (any, error) {
	res, err := a.ops.Ask(keyed(c, nil), eventID, cmd)
	return res, keyedErr(c, err)
}

// keyed is the context of the asks of a write request c: when c owns an
// Idempotency-Key on a store that commits answers with writes (the Pebble
// store; decisions §20), the write puts the key's record, the answer
// view(result) makes (view nil: the result itself), in the batch of its
// changes (ops.WithRecorder, thttp.Ctx.Recorder). Otherwise it is
// contextBG.
func keyed(c *thttp.Ctx, view func(any) any) context.Context {
	kr := c.Recorder(view)
	if kr == nil {
		return contextBG
	}
	rec := &ops.Recorder{Key: kr.Key, Value: kr.Value, Live: kr.Live, Look: kr.Retried, Release: kr.Release}
	if kr.Portable != nil {
		rec.Portable = kr.Portable
	}
	return ops.WithRecorder(contextBG, rec)
}

// keyedNamed is keyed whose answer is the view registered as name
// (idempotency.RegisterView) of the result: in cluster mode it travels
// with the write to the event's owner, which commits it (a view function
// cannot travel: keyed with one records nothing when another node owns
// the event).
func keyedNamed(c *thttp.Ctx, name string) context.Context {
	return keyedCtx(c.RecorderNamed(name))
}

// keyedFixed is keyedAgain whose answer is out whatever the write's
// result (an error's envelope), travelling to the event's owner too.
func keyedFixed(c *thttp.Ctx, out any) context.Context {
	return keyedCtx(c.RecorderFixed(out))
}

func keyedCtx(kr *thttp.KeyedRecorder) context.Context {
	if kr == nil {
		return contextBG
	}
	return ops.WithRecorder(contextBG, &ops.Recorder{Key: kr.Key, Value: kr.Value, Live: kr.Live, Look: kr.Retried,
		Release: kr.Release, Portable: kr.Portable})
}

// keyedAgain is keyed for a later write of request c whose answer
// replaces the record an earlier write of c committed (thttp.Ctx.RecorderAgain:
// a refund's outcome after its start).
func keyedAgain(c *thttp.Ctx, view func(any) any) context.Context {
	kr := c.RecorderAgain(view)
	if kr == nil {
		return contextBG
	}
	rec := &ops.Recorder{Key: kr.Key, Value: kr.Value, Live: kr.Live, Release: kr.Release}
	if kr.Portable != nil {
		rec.Portable = kr.Portable
	}
	return ops.WithRecorder(contextBG, rec)
}

// recorder is the record of a keyed write c makes outside the actors (an
// outbox requeue, a webhook endpoint): the answer view(result) makes (view
// nil: the result itself), committed by the write with its change; the
// write looks for it first when the key was claimed before (Look). nil
// when c owns no Idempotency-Key on a store that commits answers with
// writes.
func recorder(c *thttp.Ctx, view func(any) any) *ask.Recorder {
	kr := c.Recorder(view)
	if kr == nil {
		return nil
	}
	return &ask.Recorder{Key: kr.Key, Value: kr.Value, Live: kr.Live, Look: kr.Retried, Release: kr.Release}
}

// keyedErr passes err, first telling c when the write asked for may still
// commit though the ask failed (no answer in time): its key then stays
// claimed for a while instead of being free for a retry (see
// thttp.Ctx.OutcomeUnknown). A write made before (its answer lost, the
// key claimed again) answers its record (thttp.Ctx.Replay).
func keyedErr(c *thttp.Ctx, err error) error {
	if err == nil {
		return nil
	}
	if v, ok := ops.Replayed(err); ok {
		return c.Replay(v)
	}
	if err != nil && (ops.OutcomeUnknown(err) || isUnavailable(err)) {
		c.OutcomeUnknown()
	}
	return err
}

// isUnavailable reports a 503 of the pipeline's own that says the
// service could not answer (a directory unread); not a busy event nor a
// payment provider down, which refused the request before anything was
// asked.
func isUnavailable(err error) bool {
	he, ok := err.(*thttp.Error)
	if !ok {
		if _, ee := err.(*event.Error); ee {
			return false // a refusal of the core wraps nothing
		}
		he = asHTTPError(err)
	}
	return he != nil && he.Status == 503 &&
		he.Reason != event.ReasonEventBusy && he.Reason != event.ReasonPaymentProviderDown
}

// asHTTPError finds the *thttp.Error in err's chain (its own function:
// the target of errors.As escapes to the heap).
func asHTTPError(err error) *thttp.Error {
	var he *thttp.Error
	if errors.As(err, &he) {
		return he
	}
	return nil
}

// askOp is ask with the command's own result type.
func askOp[R any](a *api, eventID string, cmd event.Op[R]) (R, error) {
	return ops.Do(contextBG, a.ops, eventID, cmd)
}

// eventCmd returns the handler of a route that sends one command to the
// path's event: it binds the body (routes with a Body) or the query
// (routes with a Query) into a fresh C, lets set fill path parameters, and
// asks the actor.
func eventCmd[C event.Command](a *api, set func(c *thttp.Ctx, cmd *C)) thttp.HandlerFunc {
	return func(c *thttp.Ctx) (any, error) {
		id, err := a.eventOf(c)
		if err != nil {
			return nil, err
		}
		cmd, err := bindCmd(c, set)
		if err != nil {
			return nil, err
		}
		return a.askC(c, id, cmd)
	}
}

// bindCmd decodes a fresh C from the body (routes with a Body) and the
// query (routes with a Query; limit and cursor get the list rules there),
// then lets set fill path parameters.
func bindCmd[C event.Command](c *thttp.Ctx, set func(c *thttp.Ctx, cmd *C)) (C, error) {
	var cmd C
	if c.Route().Body != nil {
		if err := c.Bind(&cmd); err != nil {
			return cmd, err
		}
	}
	if c.Route().Query != nil {
		if err := c.BindQuery(&cmd); err != nil {
			return cmd, err
		}
	}
	if set != nil {
		set(c, &cmd)
	}
	return cmd, nil
}

// byID fills a command's ID from the path parameter name.
func byID[C event.Command](param string, field func(*C) *string) func(*thttp.Ctx, *C) {
	return func(c *thttp.Ctx, cmd *C) { *field(cmd) = c.Param(param) }
}

// authenticateDevice resolves a door device key (decisions §18): an
// active device's key is its Principal, with the device id as KeyID (its
// rate limit) and its event. A revoked device is gone from the lookup as
// soon as its revocation is durable. In cluster mode a key missing here
// may have been made on another node a moment ago, as for API keys.
//
// The Principals are built per view of the directory, all at once when a
// device's request first finds the view (its devices, indexed by key
// hash: a request hashes its key and does one map lookup, as the view's
// own lookup does two), and shared by the device's requests with what
// they note (deviceLocal): a device's request allocates nothing here, and
// a new view, as after a revocation, starts afresh.
func (d directoryAuth) authenticateDevice(token string) (*thttp.Principal, error) {
	h := directory.DeviceKeyHash(token)
	view := d.ops.Directory()
	e := d.deviceOf(view, token, &h)
	if d.ops.DirectoryShared() && (e == nil || d.ops.DirectoryStale()) {
		if err := d.syncDirectory(); err != nil {
			return nil, err
		}
		view = d.ops.Directory()
		e = d.deviceOf(view, token, &h)
	}
	if e == nil {
		return nil, nil
	}
	return &e.p, nil
}

// deviceOf finds the active device of key token (hashed: h) in view.
func (d directoryAuth) deviceOf(view *directory.State, token string, h *[sha256.Size]byte) *deviceLocal {
	if d.cache == nil {
		if dev, ok := view.LookupDevice(token); ok {
			return d.deviceLocal(dev)
		}
		return nil
	}
	set := d.cache.Load()
	if set == nil || set.view != view {
		set = &principalSet{view: view}
		d.cache.Store(set)
	}
	set.devOnce.Do(func() {
		set.devices = map[string]*deviceLocal{}
		view.ActiveDevices(func(keyHash string, dev *directory.Device) {
			set.devices[keyHash] = d.deviceLocal(dev)
		})
	})
	if !strings.HasPrefix(token, "dk_") {
		return nil // as the view's LookupDevice
	}
	return set.devices[string(h[:])]
}

// deviceLocal is what a device's requests share (thttp.Principal.Local):
// its Principal, its last-seen cell (noted by every /door/v1 request
// without a lookup) and the caught-up page of its event last answered.
type deviceLocal struct {
	p    thttp.Principal
	seen *ops.SeenCell
	// caught is the cursor of the event's newest pass stamp this device
	// was last answered caught up with (caughtUpPage).
	caught atomic.Pointer[caughtCursor]
}

func (d directoryAuth) deviceLocal(dev *directory.Device) *deviceLocal {
	e := &deviceLocal{
		p:    thttp.Principal{KeyID: dev.ID, UnitID: dev.UnitID, Type: thttp.KeyDevice, EventID: dev.EventID},
		seen: d.ops.DeviceSeenCell(dev.ID),
	}
	e.p.Local = e
	return e
}
