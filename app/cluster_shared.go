package app

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"ticketd/actors"
	"ticketd/cluster/routing"
	"ticketd/cluster/shared"
	thttp "ticketd/http"
	"ticketd/http/console"
	"ticketd/idempotency"
	"ticketd/payments"
	"ticketd/payments/stripe"
	"ticketd/persistence"
)

// clusterShared is what cluster mode keeps on every node besides the event
// log: the directory's shared log, the shared index (event index, audit
// log, webhook endpoints and delivery logs, console sessions, Stripe's
// event ids, the pages' secret) and the idempotency keys.
type clusterShared struct {
	dir   *shared.Directory
	index *shared.Index
	idem  *shared.Idempotency
	// pagesSecret is the cluster's one email-gate cookie secret, once
	// read or made (shareSecrets).
	pagesSecret atomic.Pointer[[]byte]
}

// pagesSecretKey is the shared index entry of the hosted pages' cookie
// secret, made once for the cluster by the first node to try.
const pagesSecretKey = persistence.PrefixSecret + "pages-gate"

// idempotencyTTL is how long an Idempotency-Key's answer is kept.
const idempotencyTTL = 24 * time.Hour

// shareCluster points the directory, the event index, the audit log,
// the webhook endpoints and delivery logs and the idempotency keys at the
// cluster's replicated streams, so nothing acknowledged lives on this node
// only, and makes readiness wait for the directory's first read, the
// shared index's copy and the pages' secret. Console sessions and
// Stripe's event ids are shared as their parts are built (shareConsole,
// sharedSeen).
func (m *Main) shareCluster(ac *actors.Config) {
	sh := &clusterShared{
		dir:   shared.NewDirectory(m.node, m.store),
		index: shared.NewIndex(m.node, m.store),
		idem:  shared.NewIdempotency(m.node, idempotencyTTL),
	}
	m.shared = sh
	ac.Directory = sh.dir
	ac.Index = shared.EventIndex{Index: sh.index}
	m.audit.Share(sh.index.PutAll)
	m.hooks.Share(sh.index.Put)
	// A keyed endpoint write puts its Idempotency-Key record with the
	// endpoint, in one atomic batch (decisions §20).
	m.hooks.ShareRecords(sh.index.PutAtomic, sh.index.Get, idempotencyTTL)
	ready := ac.Ready
	ac.Ready = func() error {
		if err := ready(); err != nil {
			return err
		}
		if sys := m.sys; sys == nil || !sys.DirectoryRead() {
			return errors.New("app: the directory has not been read from the cluster yet")
		}
		if sh.pagesSecret.Load() == nil {
			return errors.New("app: the hosted pages' secret has not been read from the cluster yet")
		}
		if !sh.index.CaughtUp() {
			// A node back from an outage lists events and audit entries
			// once it has copied what it missed.
			return errors.New("app: the shared index is being copied from the cluster")
		}
		return nil
	}
}

// followCluster starts following what other nodes write: directory
// appends and shared index entries.
func (m *Main) followCluster() error {
	if m.shared == nil {
		return nil
	}
	if err := m.shared.dir.Follow(m.sys.DirectoryChanged); err != nil {
		return err
	}
	sys, hooks := m.sys, m.hooks
	m.shared.index.Follow(func(key, value []byte) {
		sys.IndexChanged(key, value)
		hooks.EndpointChanged(key, value)
		hooks.DeliveryChanged(key, value)
	})
	go m.bootstrapCluster(m.sys, m.stop)
	go m.shareSecrets(m.shared, m.stop)
	return nil
}

// shareSecrets reads the cluster's cookie secret of the hosted pages, or
// makes it: the first node's put, fenced on the entry being empty, stands,
// and every racing node reads that one. It retries until the cluster can
// be written (a majority is up).
func (m *Main) shareSecrets(sh *clusterShared, stop <-chan struct{}) {
	// It never changes once made: a node that has copied it needs no
	// round trip.
	if v, ok, err := m.store.Get([]byte(pagesSecretKey)); err == nil && ok && len(v) > 0 {
		sh.pagesSecret.Store(&v)
		return
	}
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		fresh := make([]byte, 32)
		if _, err := rand.Read(fresh); err != nil {
			panic("app: no entropy: " + err.Error())
		}
		// Short tries: a request sent while the stream has no leader yet
		// is answered by nobody and would wait out a long deadline.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		v, err := sh.index.PutOnce(ctx, []byte(pagesSecretKey), []byte("pgs_"+hex.EncodeToString(fresh)))
		cancel()
		if err == nil {
			sh.pagesSecret.Store(&v)
			return
		}
		m.log.Debug("cluster: pages secret not shared yet", "err", err)
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// pagesSharedSecret is the hosted pages' secret of the cluster (nil on a
// single node, which keeps its own in the data dir).
func (m *Main) pagesSharedSecret() func() []byte {
	sh := m.shared
	if sh == nil {
		return nil
	}
	return func() []byte {
		if p := sh.pagesSecret.Load(); p != nil {
			return *p
		}
		return nil
	}
}

// shareConsole makes the console's sign-in sessions the cluster's, each
// node sweeping its copies every 10 minutes.
func (m *Main) shareConsole(con *console.Console) {
	if m.shared == nil {
		return
	}
	con.ShareSessions(localStore{m.store}, m.shared.index.PutApplied, m.shared.index.Get)
	go m.periodic("console session sweep", "dropped", 10*time.Minute, m.stop, func(bool) (int, error) {
		return con.SweepSessions(time.Now())
	})
}

// sandboxSecret is the sandbox payment provider's webhook secret when
// set; in cluster mode, unset, one derived from the admin token (the same
// on every node, which the configuration requires), so a webhook signed
// for one node verifies on any. "" on a single node: kept in the data dir.
func (m *Main) sandboxSecret(adminToken string) string {
	if m.cfg.PaymentWebhookSecret != "" || !m.cfg.Clustered() {
		return m.cfg.PaymentWebhookSecret
	}
	h := hmac.New(sha256.New, []byte(adminToken))
	h.Write([]byte("ticketd sandbox payment webhook secret"))
	return "whsec_" + hex.EncodeToString(h.Sum(nil))
}

// localStore is the node's Pebble as the console's shared sessions keep
// their copies in it (console.LocalStore).
type localStore struct{ *persistence.Store }

// DeleteKeys deletes keys in one batch.
func (l localStore) DeleteKeys(keys [][]byte) error {
	b := l.NewBatch()
	defer b.Close()
	for _, k := range keys {
		b.Delete(k)
	}
	return l.Commit(b)
}

// sharedSeen is the cluster's record of the Stripe events acted on (nil on
// a single node: the API keeps its own in Pebble).
func (m *Main) sharedSeen() *payments.Seen {
	if m.shared == nil {
		return nil
	}
	seen := payments.NewSeen(m.store, stripe.Name)
	seen.Share(m.shared.index.Put, m.shared.index.Get)
	return seen
}

// idempotencyStore is the cluster's in cluster mode, else the Pebble one
// (swept hourly). In cluster mode the local store holds the records the
// writes of the events this node owns committed (see
// shared.Idempotency): the Pebble one's sweep deletes them once expired.
func (m *Main) idempotencyStore() idempotency.Store {
	m.idem = thttp.NewDurableIdempotency(m.store, idempotencyTTL, m.log.Error)
	go m.sweepIdempotency(m.stop)
	if m.shared != nil {
		return m.shared.idem
	}
	return m.idem
}

func (m *Main) closeShared() {
	if m.shared != nil {
		// The audit entries buffered by the last requests go out while the
		// node is still in the cluster.
		if m.audit != nil {
			if err := m.audit.Flush(); err != nil {
				m.log.Error("audit flush at shutdown", "err", err)
			}
		}
		m.shared.dir.Close()
		m.shared.index.Close()
		m.shared = nil
	}
}

// bootstrapCluster makes the Default unit and its keys of a new cluster,
// as a single node does on an empty data dir, once this node is ready:
// the unit is created only if the directory has none, so of the nodes
// starting together one makes it and prints its keys.
func (m *Main) bootstrapCluster(sys *actors.System, stop <-chan struct{}) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for sys.Ready() != nil {
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u, created, err := sys.FirstUnit(ctx, "Default")
	if err != nil {
		m.log.Error("cluster bootstrap: first unit", "err", err)
		return
	}
	if !created {
		return
	}
	b, err := bootstrapKeys(ctx, sys, u.ID)
	if err != nil {
		m.log.Error("cluster bootstrap: keys", "unit", u.ID, "err", err)
		return
	}
	fmt.Fprintf(m.out, "  business unit:   Default (%s), made by this node for the new cluster\n", b.UnitID)
	fmt.Fprintf(m.out, "  secret key:      %s  (shown once)\n", b.SecretKey)
	fmt.Fprintf(m.out, "  publishable key: %s\n", b.PublishableKey)
}

// The cluster's parts implement the actors' and the pipeline's interfaces
// without importing them (the interfaces belong to their users).
var (
	_ actors.SharedLog           = (*shared.Directory)(nil)
	_ actors.KeyedLog            = (*shared.Directory)(nil)
	_ actors.SharedIndex         = shared.EventIndex{}
	_ idempotency.RecordingStore = (*shared.Idempotency)(nil)
	_ idempotency.OriginStore    = (*shared.Idempotency)(nil)
	_ routing.Actors             = (*actors.System)(nil)
	_ routing.AnswerEncoder      = thttp.EncodeAnswer
)
