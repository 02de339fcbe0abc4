package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"ticketd/actors"
	"ticketd/cluster"
	thttp "ticketd/http"
)

// clusterShared is what cluster mode keeps on every node besides the event
// log: the directory's shared log, the shared index (event index, audit
// log, webhook endpoints) and the idempotency keys.
type clusterShared struct {
	dir   *cluster.Directory
	index *cluster.Index
	idem  *cluster.Idempotency
}

// idempotencyTTL is how long an Idempotency-Key's answer is kept.
const idempotencyTTL = 24 * time.Hour

// shareCluster points the directory, the event index, the audit log,
// the webhook endpoints and the idempotency keys at the cluster's replicated streams, so nothing
// acknowledged lives on this node only, and makes readiness wait for the
// directory's first read and the shared index's copy.
func (m *Main) shareCluster(ac *actors.Config) {
	sh := &clusterShared{
		dir:   cluster.NewDirectory(m.node, m.store),
		index: cluster.NewIndex(m.node, m.store),
		idem:  cluster.NewIdempotency(m.node, idempotencyTTL),
	}
	m.shared = sh
	ac.Directory = sh.dir
	ac.Index = cluster.EventIndex{Index: sh.index}
	m.audit.Share(sh.index.PutAll)
	m.hooks.Share(sh.index.Put)
	ready := ac.Ready
	ac.Ready = func() error {
		if err := ready(); err != nil {
			return err
		}
		if sys := m.sys; sys == nil || !sys.DirectoryRead() {
			return errors.New("app: the directory has not been read from the cluster yet")
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
	})
	go m.bootstrapCluster(m.sys, m.stop)
	return nil
}

// idempotencyStore is the cluster's in cluster mode, else the Pebble one
// (swept hourly).
func (m *Main) idempotencyStore() thttp.IdempotencyStore {
	if m.shared != nil {
		return m.shared.idem
	}
	m.idem = thttp.NewDurableIdempotency(m.store, idempotencyTTL, m.log.Error)
	go m.sweepIdempotency(m.stop)
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
