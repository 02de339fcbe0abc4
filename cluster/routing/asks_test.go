package routing

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ticketd/ask"
	"ticketd/cluster/eventlog"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/event"
	"ticketd/persistence"
)

// gatedLog holds every commit's durability while its gate is shut: the
// requests of its node's events wait, as on a slow or stalled log.
type gatedLog struct {
	persistence.Log
	gate *gate
}

type gate struct {
	mu   sync.Mutex
	shut chan struct{} // nil: open
	held atomic.Int64  // records of the commits that reached the gate closed
}

func (g *gate) close() {
	g.mu.Lock()
	g.shut = make(chan struct{})
	g.mu.Unlock()
}

func (g *gate) open() {
	g.mu.Lock()
	if g.shut != nil {
		close(g.shut)
		g.shut = nil
	}
	g.mu.Unlock()
}

func (g *gate) wait() {
	g.mu.Lock()
	c := g.shut
	g.mu.Unlock()
	if c != nil {
		<-c
	}
}

func (l gatedLog) Claim(stream string, last uint64) (persistence.Log, error) {
	c, err := l.Log.Claim(stream, last)
	if err != nil {
		return nil, err
	}
	return gatedLog{Log: c, gate: l.gate}, nil
}

func (l gatedLog) CommitAsync(b persistence.LogBatch) (func() error, error) {
	var records int64
	if lb, ok := b.(*eventlog.Batch); ok && lb.First != 0 {
		records = int64(lb.Last - lb.First + 1)
	}
	wait, err := l.Log.CommitAsync(b)
	if err != nil {
		return nil, err
	}
	l.gate.mu.Lock()
	if l.gate.shut != nil {
		l.gate.held.Add(records)
	}
	l.gate.mu.Unlock()
	return func() error { l.gate.wait(); return wait() }, nil
}

// gatedStacks starts 3 stacks whose logs are gated, one gate per stack.
func gatedStacks(t *testing.T) ([]*stack, []*gate) {
	gates := make([]*gate, 3)
	i := 0
	stacks := startStacks(t, 3, func(c *actors.Config) {
		gates[i] = &gate{}
		c.Log = gatedLog{Log: c.Log, gate: gates[i]}
		i++
	})
	return stacks, gates
}

// eventsOn creates events through sys until one is owned by stacks[own]
// and one by another stack, and answers them with their ticket types.
func eventsOn(t *testing.T, stacks []*stack, own int) (mine, mineTT, other, otherTT string) {
	t.Helper()
	for range 100 {
		evt := stacks[own].sys.NewEventID()
		o := ownerIndex(t, stacks, evt)
		if o == own && mine == "" {
			mine, mineTT = evt, sellable(t, stacks[own].sys, evt, 1000)
		} else if o != own && other == "" {
			other, otherTT = evt, sellable(t, stacks[own].sys, evt, 1000)
		}
		if mine != "" && other != "" {
			return mine, mineTT, other, otherTT
		}
	}
	t.Fatal("no events on two owners")
	return
}

func orderReq(t *testing.T, evt, tt string, i int) []byte {
	t.Helper()
	b, err := encodeReq(&wireReq{EventID: evt, Cmd: wireCmd(event.OnStorefront(event.PlaceOrder{Email: fmt.Sprintf("b%d@x.io", i),
		Items: []event.OrderItem{{ItemType: event.ItemRegistrationType, ItemID: tt, Quantity: 1}}, Storefront: true}))})
	require.NoError(t, err)
	return b
}

// batchAnswers sends a batch of requests to stacks[to] as node "tst" and
// answers a channel of the answers, by id, as they come.
func batchAnswers(t *testing.T, from, to *stack, reqs map[uint64][2]any) <-chan map[uint64]wireResp {
	t.Helper()
	out := make(chan map[uint64]wireResp, 16)
	sub, err := from.node.Conn().Subscribe(ansSubj+"tst.>", func(m *nats.Msg) {
		got := map[uint64]wireResp{}
		require.NoError(t, readBatch(m.Data, false, func(id, _ uint64, body []byte) {
			var r wireResp
			require.NoError(t, decodeResp(body, &r))
			got[id] = r
		}))
		out <- got
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	b := appendBatchHead(nil, len(reqs))
	for id := uint64(1); id <= uint64(len(reqs)); id++ {
		b = appendRequest(b, id, reqs[id][0].(uint64), reqs[id][1].([]byte))
	}
	require.NoError(t, from.node.Conn().PublishMsg(&nats.Msg{Subject: askSubj + to.node.Name(),
		Reply: fmt.Sprintf("%stst.%s.1.%d", ansSubj, to.node.Name(), len(reqs)), Data: b}))
	return out
}

// TestForwardBatchAnswers: the requests of one batch are each answered
// for themselves, as soon as each is: a result, "moved" for an event the
// node does not own, busy beyond maxServing, and unavailable once the
// request's own deadline passed while the others of its batch still wait.
func TestForwardBatchAnswers(t *testing.T) {
	stacks, gates := gatedStacks(t)
	o, f := 0, 1
	mine, mineTT, other, otherTT := eventsOn(t, stacks, o)
	owner := stacks[o]

	// A result and a moved answer, in one batch.
	ans := batchAnswers(t, stacks[f], owner, map[uint64][2]any{
		1: {uint64(5000), orderReq(t, mine, mineTT, 1)},
		2: {uint64(5000), orderReq(t, other, otherTT, 2)},
	})
	got := collectAnswers(t, ans, 2)
	require.Nil(t, got[1].Err)
	require.False(t, got[1].Moved)
	require.IsType(t, event.Order{}, got[1].Result)
	require.True(t, got[2].Moved, "%+v", got[2])

	// A node of an earlier build forwards one request a message: still
	// served.
	m, err := stacks[f].node.Conn().Request(askSubj+owner.node.Name(), orderReq(t, mine, mineTT, 9), 10*time.Second)
	require.NoError(t, err)
	var one wireResp
	require.NoError(t, decodeResp(m.Data, &one))
	require.Nil(t, one.Err)
	require.IsType(t, event.Order{}, one.Result)

	// The owner's commits stall. Of one batch: the first request waits
	// for its commit until its deadline (400 ms), the second until the gate
	// opens (5 s), the third and fourth find no room (maxServing, filled
	// but for one) and are answered busy at once.
	gates[o].close()
	for range maxServing - 2 {
		owner.router.sem <- struct{}{}
	}
	sent := time.Now()
	ans = batchAnswers(t, stacks[f], owner, map[uint64][2]any{
		1: {uint64(400), orderReq(t, mine, mineTT, 3)},
		2: {uint64(5000), orderReq(t, mine, mineTT, 4)},
		3: {uint64(5000), orderReq(t, mine, mineTT, 5)},
		4: {uint64(5000), orderReq(t, mine, mineTT, 6)},
	})
	got = collectAnswers(t, ans, 3)
	waited := time.Since(sent)
	for range maxServing - 2 {
		<-owner.router.sem
	}
	require.ErrorIs(t, got[3].Err.err(), ask.ErrBusy)
	require.ErrorIs(t, got[4].Err.err(), ask.ErrBusy)
	require.NotNil(t, got[1].Err, "%+v", got[1])
	require.ErrorIs(t, got[1].Err.err(), ask.ErrUnavailable)
	require.NotContains(t, got, uint64(2), "the second request waits for its commit")
	require.Less(t, waited, 4*time.Second, "the first request's own deadline ended its wait")
	gates[o].open()
	select {
	case m := <-ans:
		require.Contains(t, m, uint64(2))
		require.Nil(t, m[2].Err, "%+v", m[2].Err)
	case <-time.After(10 * time.Second):
		t.Fatal("no answer once the commits went on")
	}
}

// TestForwardBatches: requests queued for an owner while its sender is
// busy go as one message, each answered to its own caller; and through
// Forward, many concurrent orders on another node's event are all served.
func TestForwardBatches(t *testing.T) {
	stacks := startStacks(t, 3)
	o, f := 0, 1
	mine, mineTT, _, _ := eventsOn(t, stacks, o)
	fwd := stacks[f].router
	require.NoError(t, fwd.listen())
	p := fwd.peer(stacks[o].node.Name())

	// The sender is busy: ten requests queue, then go as one batch.
	p.mu.Lock()
	p.sending = true
	p.mu.Unlock()
	before := p.batches.Load()
	var wg sync.WaitGroup
	results := make([]wireResp, 10)
	for i := range results {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(bg, 10*time.Second)
			defer cancel()
			body, err := p.ask(ctx, fwd.ownerCtx(p.owner), time.Now().Add(forwardTimeout), orderReq(t, mine, mineTT, 100+i))
			require.NoError(t, err)
			require.NoError(t, decodeResp(body, &results[i]))
		})
	}
	require.Eventually(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.queue) == len(results)
	}, 5*time.Second, time.Millisecond)
	go p.send()
	wg.Wait()
	require.Equal(t, int64(1), p.batches.Load()-before)
	ids := map[string]bool{}
	for _, r := range results {
		require.Nil(t, r.Err)
		ids[r.Result.(event.Order).ID] = true
	}
	require.Len(t, ids, len(results), "each caller has its own order")

	var ok atomic.Int64
	for i := range 200 {
		wg.Go(func() {
			if _, err := placeOrder(bg, stacks[f].sys, mine, mineTT, 1000+i); err == nil {
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	require.Equal(t, int64(200), ok.Load())
	t.Logf("%d batches for %d requests", p.batches.Load()-before-1, 200)
}

// TestForwardBatchOwnerGone: a batch for a node nobody listens as is
// answered "no responders", each of its requests (Forward sends them
// again); a batch in flight to an owner that is lost is answered at once,
// an unknown outcome, not after the request's deadline.
func TestForwardBatchOwnerGone(t *testing.T) {
	stacks, gates := gatedStacks(t)
	o, f := 0, 1
	mine, mineTT, _, _ := eventsOn(t, stacks, o)
	fwd := stacks[f].router
	require.NoError(t, fwd.listen())

	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	_, err := fwd.request(ctx, time.Time{}, "nobody", orderReq(t, mine, mineTT, 1))
	require.ErrorIs(t, err, nats.ErrNoResponders)

	// An owner that takes requests and never answers: the peer's sweep
	// answers a request at its deadline, though the caller's ctx has none
	// (no timer per request), and forgets it.
	sub, err := stacks[f].node.Conn().Subscribe(askSubj+"mute", func(*nats.Msg) {})
	require.NoError(t, err)
	defer func() { _ = sub.Unsubscribe() }()
	began := time.Now()
	_, err = fwd.request(bg, began.Add(300*time.Millisecond), "mute", orderReq(t, mine, mineTT, 2))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	took := time.Since(began)
	require.GreaterOrEqual(t, took, 300*time.Millisecond)
	require.Less(t, took, 300*time.Millisecond+sweepEvery+2*time.Second)
	require.Zero(t, waitingOn(fwd.peer("mute")))

	gates[o].close()
	defer gates[o].open()
	errs := make(chan error, 3)
	for i := range 3 {
		go func() {
			_, err := placeOrder(bg, stacks[f].sys, mine, mineTT, 10+i)
			errs <- err
		}()
	}
	// Until the owner's actor holds a commit at the gate (one at a time
	// on a cluster log: the others wait in the actor, or are on their
	// way). The one held never gets its answer: the owner's loss must end
	// its wait, an unknown outcome. One still on its way when the owner
	// goes may be answered "no responders" or "moved" (its shard's
	// leadership went with the node) and sent again, to the new owner,
	// maybe the forwarding node: it may succeed there, never having run
	// on the old owner. Either way each is answered at once.
	require.Eventually(t, func() bool {
		return gates[o].held.Load() >= 1 && waitingOn(fwd.peer(stacks[o].node.Name())) == 3
	},
		5*time.Second, 10*time.Millisecond)
	lost := time.Now()
	_ = stacks[o].node.Close() // its server and subscriptions go; the actors wait on the gate
	gone := 0
	for range 3 {
		select {
		case err := <-errs:
			if err != nil {
				require.ErrorIs(t, err, ask.ErrUnavailable)
				require.ErrorContains(t, err, errOwnerGone.Error())
				gone++
			}
		case <-time.After(forwardTimeout):
			t.Fatal("no answer for a request to a lost owner")
		}
	}
	require.GreaterOrEqual(t, gone, 1, "the order held by the lost owner is an unknown outcome")
	t.Logf("answered %v after the owner's loss, %d of 3 unknown outcomes", time.Since(lost).Round(time.Millisecond), gone)
}

func waitingOn(p *peer) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.waiting)
}

// collectAnswers reads answer batches from ans until it holds n answers.
func collectAnswers(t *testing.T, ans <-chan map[uint64]wireResp, n int) map[uint64]wireResp {
	t.Helper()
	got := map[uint64]wireResp{}
	for len(got) < n {
		select {
		case m := <-ans:
			for id, r := range m {
				got[id] = r
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("answers: %v", got)
		}
	}
	return got
}
