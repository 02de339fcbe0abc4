package routing

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"ticketd/actors"
	"ticketd/ask"
	"ticketd/cluster/clustertest"
	"ticketd/cluster/eventlog"
	"ticketd/cluster/node"
	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/idempotency"

	"github.com/stretchr/testify/require"
)

// keyedCtx is ctx carrying w's record for the write asked with it, as the
// front door makes it (http.Ctx.Recorder): looked for first when w is a
// retry (Retried).
func keyedCtx(w *idempotency.KeyedWrite) context.Context {
	return ask.WithRecorder(bg, &ask.Recorder{Key: w.Key, Value: func(res any) []byte { return thttp.KeyedValue(w, res) },
		Live: idempotency.Live, Look: w.Retried, Portable: w})
}

func keyedWrite(key string, status int) *idempotency.KeyedWrite {
	return &idempotency.KeyedWrite{Key: idempotency.RecordKey("key_once", key), FP: sha256.Sum256([]byte(key)),
		Expires: time.Now().Add(time.Hour), Status: status}
}

// TestKeyedRetryAtNewOwnerBeforeImport (decisions §20): a keyed event
// creation and a keyed order, made through a node that does not own the
// event, lose their answers with the owner; their retries (the key
// claimed again: Look) reach the new owner, which activates the event on
// the first of them, before it has imported the event's records (a gain
// activates none here: ActivateMax < 0, so the import follows the claim on
// a goroutine of its own, as for an event past the activation's limit or
// asked before the activation reaches it). Each retry replays the record
// its write committed: not 409 ALREADY_EXISTS for the creation (its id is
// the key's, the event exists), not a second order.
func TestKeyedRetryAtNewOwnerBeforeImport(t *testing.T) {
	nodes, _ := clustertest.StartClusterWith(t, 3, func(_ int, c *node.Config) { c.ActivateMax = -1 })
	stacks := startOwnedStacks(t, nodes)
	evt := stacks[0].sys.NewEventID()
	b := ownerIndex(t, stacks, evt)
	via := stacks[(b+1)%3].sys

	create := keyedWrite("create", 201)
	starts := event.Time{Time: time.Now().Add(30 * 24 * time.Hour).UTC()}
	mk := event.CreateEvent{Name: "Once", Timezone: "UTC", StartsAt: &starts}
	made, err := via.CreateEvent(keyedCtx(create), "bu_1", evt, mk)
	require.NoError(t, err)
	capacity := 10
	tt, err := actors.Ask(bg, via, evt, event.CreateTicketType{Name: "GA", Capacity: &capacity})
	require.NoError(t, err)
	_, err = actors.Ask(bg, via, evt, event.UpdateTicketType{ID: tt.ID, Status: event.Some("open")})
	require.NoError(t, err)
	_, err = actors.Ask(bg, via, evt, event.UpdateEvent{Status: event.Some("published")})
	require.NoError(t, err)
	order := keyedWrite("order", 201)
	place := event.PlaceOrder{Email: "once@x.io", Items: []event.OrderItem{{ItemType: event.ItemRegistrationType, ItemID: tt.ID, Quantity: 1}}}
	placed, err := actors.Ask(keyedCtx(order), via, evt, place)
	require.NoError(t, err)
	// The owner's store holds both records once durable; the owner is lost.
	require.Eventually(t, func() bool {
		n := 0
		for _, w := range []*idempotency.KeyedWrite{create, order} {
			if _, ok, _ := stacks[b].store.Get(w.Key); ok {
				n++
			}
		}
		return n == 2
	}, 10*time.Second, 20*time.Millisecond)
	stacks[b].close()

	// The retries, through each survivor (one is the new owner: asked
	// locally; the other forwards).
	retry := func(sys *actors.System, w *idempotency.KeyedWrite, do func(ctx context.Context) (any, error)) []byte {
		t.Helper()
		again := *w
		again.Retried = true
		deadline := time.Now().Add(resumeWithin)
		for {
			_, err := do(keyedCtx(&again))
			if r, ok := ask.IsReplayed(err); ok {
				return r.Value
			}
			require.True(t, errors.Is(err, ask.ErrUnavailable) || errors.Is(err, ask.ErrBusy), "retry of %s decided again: %v", w.Key, err)
			require.True(t, time.Now().Before(deadline), "retry of %s: %v", w.Key, err)
			time.Sleep(100 * time.Millisecond)
		}
	}
	for _, s := range stacks {
		if s.closed {
			continue
		}
		rec := retry(s.sys, create, func(ctx context.Context) (any, error) { return s.sys.CreateEvent(ctx, "bu_1", evt, mk) })
		want, ok := thttp.EncodeAnswer(made)
		require.True(t, ok)
		_, _, got, err := idempotency.DecodeRecord(rec)
		require.NoError(t, err)
		require.Equal(t, 201, got.Status)
		require.JSONEq(t, string(want), string(got.Body), "the creation's first answer")

		rec = retry(s.sys, order, func(ctx context.Context) (any, error) { return s.sys.Ask(ctx, evt, place) })
		_, _, got, err = idempotency.DecodeRecord(rec)
		require.NoError(t, err)
		want, ok = thttp.EncodeAnswer(placed)
		require.True(t, ok)
		require.JSONEq(t, string(want), string(got.Body), "the order's first answer")
	}
	// A retried creation whose first try wrote nothing (its key claimed
	// before, its answer a 503) creates the event, through either node.
	for _, s := range stacks {
		if s.closed {
			continue
		}
		fresh := keyedWrite("fresh-"+s.node.Name(), 201)
		fresh.Retried = true
		id := s.sys.NewEventID()
		deadline := time.Now().Add(resumeWithin)
		for {
			_, err := s.sys.CreateEvent(keyedCtx(fresh), "bu_1", id, mk)
			if err == nil {
				break
			}
			require.ErrorIs(t, err, ask.ErrUnavailable)
			require.True(t, time.Now().Before(deadline), "retried creation of %s never made: %v", id, err)
			time.Sleep(100 * time.Millisecond)
		}
	}
	i := firstOpen(stacks)
	list, err := actors.Ask(bg, stacks[i].sys, evt, event.ListOrders{Limit: 100})
	require.NoError(t, err)
	require.Len(t, list.Data, 1, "one order for the key")
}

// startOwnedStacks is startStacksOn with what the events owe, and the
// records of their keyed writes, following their ownership (Router.Own),
// as app wires it.
func startOwnedStacks(t *testing.T, nodes []*node.Node) []*stack {
	t.Helper()
	out := make([]*stack, len(nodes))
	for i, nd := range nodes {
		st := clustertest.OpenLocal(t)
		s := &stack{node: nd, store: st, log: eventlog.NewLog(nd, st), router: NewRouter(nd, thttp.EncodeAnswer)}
		s.router.Own(s.log, nil)
		sys, err := actors.Open(actors.Config{
			Event:         event.Config{BaseURL: "http://test", OrderHold: 15 * time.Minute, CheckoutSessionTTL: 24 * time.Hour},
			Log:           s.log,
			Snapshots:     eventlog.NoSnapshots{},
			SnapshotEvery: 1 << 30,
			Forward:       s.router.Forward,
			Ready:         func() error { return nil },
			Logger:        clustertest.FailLog(t).With("node", nd.Name(), "part", "actors"),
		}, st, nil)
		require.NoError(t, err)
		s.sys = sys
		require.NoError(t, s.router.Serve(sys))
		out[i] = s
		t.Cleanup(s.close)
	}
	clustertest.WaitSpread(t, nodes)
	return out
}
