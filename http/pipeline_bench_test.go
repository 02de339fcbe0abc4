package http_test

// Benchmarks of the whole request pipeline in process: the real handler
// chain (router, auth, rate limits, binder, developer and audit logs,
// metrics, encoding) of app.Main over Pebble in a temp dir,
// driven through fasthttp.RequestCtx without sockets. The store runs with
// NoSync so ns/op is CPU, not fsync waits: what the HTTP layer adds to a
// request is what these measure (the actor's share is the same before and
// after a change to http/).
//
//	go test -run '^$' -bench Pipeline -benchmem ./http/

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"ticketd/actors"
	"ticketd/app"
	"ticketd/app/apptest"
	"ticketd/bench/load"
	"ticketd/directory"
	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/persistence"
)

// pipeFx is a service without a listener: its handler and seeded data.
type pipeFx struct {
	svc     *apptest.Service
	sys     *actors.System
	h       fasthttp.RequestHandler
	sk, pk  string
	addr    net.Addr
	eventID string
	typeID  string
}

// opts adjust the configuration after the benchmarks' own settings.
func newPipeFx(b *testing.B, capacity int, opts ...apptest.Option) *pipeFx {
	b.Helper()
	// The production logger at the level the benchmark runs the service
	// with (warn), on stderr: a request that logs shows up as a syscall.
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// The real wiring (app.Main, as `ticketd serve` runs it), its store
	// with NoSync; its handler is driven without the listener.
	svc := apptest.Start(b, func(c *app.Config) {
		c.Logger = log
		c.OrderHold, c.CheckoutSessionTTL = 6*time.Hour, 24*time.Hour
		// Every request comes from one address: no per-client hold limit.
		c.StorefrontOpenOrdersPerIP, c.StorefrontOpenSessionsPerIP = 0, 0
		c.Tune = &app.Tuning{
			Store:  func(o *persistence.Options) { o.NoSync = true },
			Actors: func(ac *actors.Config) { ac.AskTimeout = time.Minute },
		}
		for _, o := range opts {
			o(c)
		}
	})
	sys, srv := svc.Sys, svc.Main.Server()
	ctx := context.Background()
	u, err := sys.CreateUnit(ctx, "Bench")
	require.NoError(b, err)
	fx := &pipeFx{svc: svc, sys: sys, h: srv.Handler(), addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}}
	_, fx.sk, err = sys.CreateKey(ctx, actors.NewKeySpec{UnitID: u.ID, Type: directory.Secret, Name: "bench", Version: thttp.CurrentVersion})
	require.NoError(b, err)
	_, fx.pk, err = sys.CreateKey(ctx, actors.NewKeySpec{UnitID: u.ID, Type: directory.Publishable, Name: "bench", Version: thttp.CurrentVersion})
	require.NoError(b, err)

	starts := event.Time{Time: time.Date(2030, 6, 1, 9, 0, 0, 0, time.UTC)}
	res, err := sys.CreateEvent(ctx, u.ID, sys.NewEventID(), event.CreateEvent{Name: "Drop", Timezone: "UTC", StartsAt: &starts})
	require.NoError(b, err)
	fx.eventID = pipeID(b, res)
	res, err = sys.Ask(ctx, fx.eventID, event.CreateTicketType{Name: "General", Capacity: &capacity})
	require.NoError(b, err)
	fx.typeID = pipeID(b, res)
	_, err = sys.Ask(ctx, fx.eventID, event.UpdateTicketType{ID: fx.typeID, Status: event.Some("open")})
	require.NoError(b, err)
	_, err = sys.Ask(ctx, fx.eventID, event.UpdateEvent{Status: event.Some("published")})
	require.NoError(b, err)
	return fx
}

func pipeID(b *testing.B, v any) string {
	b.Helper()
	raw, err := json.Marshal(v)
	require.NoError(b, err)
	var o struct {
		ID           string `json:"id"`
		Registration struct {
			ID string `json:"id"`
		} `json:"registration"`
	}
	require.NoError(b, json.Unmarshal(raw, &o))
	if o.ID == "" {
		o.ID = o.Registration.ID
	}
	require.NotEmpty(b, o.ID, "no id in %s", raw)
	return o.ID
}

// pipeParallelism is goroutines per GOMAXPROCS: many requests in flight,
// like the load generator's 128 connections, so the actor batches and the
// figure is CPU per request rather than one round trip's latency.
const pipeParallelism = 32

// pipeRun serves b.N requests from pipeParallelism*GOMAXPROCS goroutines;
// req fills request i and want is its status.
func (fx *pipeFx) pipeRun(b *testing.B, want int, req func(i int, r *fasthttp.Request)) {
	b.Helper()
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(pipeParallelism)
	cpu0 := pipeCPU(b)
	b.ResetTimer()
	defer func() {
		// Process CPU per request (every goroutine: handler, actor,
		// committer): steadier than ns/op on a shared 2-core machine,
		// where other processes take wall time.
		b.ReportMetric(float64(pipeCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
	}()
	b.RunParallel(func(pb *testing.PB) {
		var rc fasthttp.RequestCtx
		var r fasthttp.Request
		for pb.Next() {
			r.Reset()
			req(int(next.Add(1)-1), &r)
			rc.Init(&r, fx.addr, nil)
			fx.h(&rc)
			if st := rc.Response.StatusCode(); st != want {
				b.Errorf("status %d, want %d: %s", st, want, rc.Response.Body())
				return
			}
		}
	})
}

// pipeCPU returns the process's user and system CPU time in nanoseconds.
func pipeCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func pipePost(r *fasthttp.Request, uri, key string) {
	r.Header.SetMethod("POST")
	r.SetRequestURI(uri)
	r.Header.Set("Authorization", "Bearer "+key)
	r.Header.SetContentType("application/json")
}

func orderJSON(b []byte, i int, typeID string) []byte {
	b = append(b[:0], `{"email":"b`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `@bench.example","name":"Buyer","items":[{"itemType":"registration_type","itemId":"`...)
	b = append(b, typeID...)
	return append(b, `","quantity":1}]}`...)
}

// BenchmarkPipelineFlashSale is the flash-sale request: a storefront order
// that becomes a hold (201), a new buyer each time.
func BenchmarkPipelineFlashSale(b *testing.B) {
	fx := newPipeFx(b, 10_000_000)
	uri := "http://127.0.0.1:8080/storefront/v1/events/" + fx.eventID + "/orders"
	fx.pipeRun(b, 201, func(i int, r *fasthttp.Request) {
		pipePost(r, uri, fx.pk)
		r.SetBody(orderJSON(r.Body(), i, fx.typeID))
	})
}

// BenchmarkPipelineSoldOut is the sold-out request: the same order
// answered 412, no write.
func BenchmarkPipelineSoldOut(b *testing.B) {
	fx := newPipeFx(b, 1)
	uri := "http://127.0.0.1:8080/storefront/v1/events/" + fx.eventID + "/orders"
	_, err := fx.sys.Ask(context.Background(), fx.eventID, event.CreateRegistration{
		Email: "first@bench.example", Name: "First", RegistrationTypeID: fx.typeID})
	require.NoError(b, err)
	fx.pipeRun(b, 412, func(i int, r *fasthttp.Request) {
		pipePost(r, uri, fx.pk)
		r.SetBody(orderJSON(r.Body(), i, fx.typeID))
	})
}

// pipeRegistrations creates n confirmed registrations and returns their ids.
func (fx *pipeFx) pipeRegistrations(b *testing.B, n int) []string {
	b.Helper()
	ids := make([]string, n)
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 16 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				res, err := fx.sys.Ask(context.Background(), fx.eventID, event.CreateRegistration{
					Email: "r" + strconv.Itoa(i) + "@bench.example", Name: "Bench", RegistrationTypeID: fx.typeID,
				})
				if err != nil {
					b.Error(err)
					return
				}
				ids[i] = pipeID(b, res)
			}
		})
	}
	wg.Wait()
	return ids
}

func checkinJSON(b []byte, id string) []byte {
	b = append(b[:0], `{"registrationId":"`...)
	b = append(b, id...)
	return append(b, `","subjectType":"event"}`...)
}

// BenchmarkPipelineCheckin is the check-in burst request: a Developer API
// check-in of a registration not yet checked in (201, a durable change,
// audited).
func BenchmarkPipelineCheckin(b *testing.B) {
	fx := newPipeFx(b, 10_000_000)
	uri := "http://127.0.0.1:8080/v1/events/" + fx.eventID + "/checkins"
	ids := fx.pipeRegistrations(b, b.N)
	fx.pipeRun(b, 201, func(i int, r *fasthttp.Request) {
		pipePost(r, uri, fx.sk)
		r.SetBody(checkinJSON(r.Body(), ids[i]))
	})
}

// BenchmarkPipelineCheckinRepeat is a duplicate scan: 200, no write.
func BenchmarkPipelineCheckinRepeat(b *testing.B) {
	fx := newPipeFx(b, 10_000_000)
	uri := "http://127.0.0.1:8080/v1/events/" + fx.eventID + "/checkins"
	id := fx.pipeRegistrations(b, 1)[0]
	_, err := fx.sys.Ask(context.Background(), fx.eventID, event.RecordCheckin{RegistrationID: id, SubjectType: "event"})
	require.NoError(b, err)
	body := checkinJSON(nil, id)
	fx.pipeRun(b, 200, func(i int, r *fasthttp.Request) {
		pipePost(r, uri, fx.sk)
		r.SetBody(body)
	})
}

// pipeRoom gives the benchmark's event a waiting room whose sale starts in
// an hour (every join waits, before the shuffle) and returns the queue
// route's path.
func (fx *pipeFx) pipeRoom(b *testing.B) string {
	b.Helper()
	on := event.Time{Time: time.Now().Add(time.Hour).UTC().Truncate(time.Second)}
	_, err := fx.sys.Ask(context.Background(), fx.eventID, event.UpdateEvent{WaitingRoom: &event.WaitingRoomConfig{OnSaleAt: &on}})
	require.NoError(b, err)
	return "http://127.0.0.1:8080/storefront/v1/events/" + fx.eventID + "/queue"
}

// BenchmarkPipelineQueueJoin is a drop's join: a durable queue entry (201).
func BenchmarkPipelineQueueJoin(b *testing.B) {
	fx := newPipeFx(b, 1000)
	uri := fx.pipeRoom(b)
	fx.pipeRun(b, 201, func(i int, r *fasthttp.Request) {
		pipePost(r, uri, fx.pk)
		r.SetBodyString(`{}`)
	})
}

// joinQueue joins n entries to the event's waiting room, 16 at a time,
// and returns their queue ids in join order.
func (fx *pipeFx) joinQueue(b *testing.B, n int) []string {
	ids := make([]string, n)
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 16 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				res, err := fx.sys.Ask(context.Background(), fx.eventID, event.Storefront{Cmd: event.JoinQueue{Client: "bench"}})
				if err != nil {
					b.Error(err)
					return
				}
				ids[i] = res.(event.QueueStatus).QueueID
			}
		})
	}
	wg.Wait()
	return ids
}

// BenchmarkPipelineQueuePoll is a drop's status poll of a waiting entry
// (200), answered from the sale view.
func BenchmarkPipelineQueuePoll(b *testing.B) {
	fx := newPipeFx(b, 1000)
	uri := fx.pipeRoom(b)
	const entries = 10_000
	ids := fx.joinQueue(b, entries)
	fx.pipeRun(b, 200, func(i int, r *fasthttp.Request) {
		r.Header.SetMethod("GET")
		r.SetRequestURI(uri + "/" + ids[i%entries])
		r.Header.Set("Authorization", "Bearer "+fx.pk)
	})
}

// BenchmarkPipelineQueuePollPositions is the queue drop's census poll:
// 100,000 entries joined, shuffled at onSaleAt with admission paused, each
// polled in join order (the entry table's lookups miss the caches as they
// do in the drop), answered from the sale view with its position.
func BenchmarkPipelineQueuePollPositions(b *testing.B) {
	fx := newPipeFx(b, 1000)
	uri := fx.pipeRoom(b)
	const entries = 100_000
	ids := fx.joinQueue(b, entries)
	on, paused := event.Time{Time: time.Now().Add(time.Second).UTC().Truncate(time.Second).Add(time.Second)}, true
	_, err := fx.sys.Ask(context.Background(), fx.eventID, event.UpdateEvent{WaitingRoom: &event.WaitingRoomConfig{OnSaleAt: &on, Paused: &paused}})
	require.NoError(b, err)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		res, err := fx.sys.Ask(context.Background(), fx.eventID, event.GetEvent{})
		require.NoError(b, err)
		if wr := res.(event.Event).WaitingRoom; wr != nil && wr.Shuffled {
			break
		}
		require.True(b, time.Now().Before(deadline), "not shuffled a minute after onSaleAt")
	}
	fx.pipeRun(b, 200, func(i int, r *fasthttp.Request) {
		r.Header.SetMethod("GET")
		r.SetRequestURI(uri + "/" + ids[i%entries])
		r.Header.Set("Authorization", "Bearer "+fx.pk)
	})
}

// BenchmarkPipelineCeiling is the bench's ceiling server's handler (the
// reference every scenario's ratio divides by) under the same driver: the
// gap between its cpu-ns/op and a route's is what that route's ratio
// pays for (both servers share the socket and parsing costs, which this
// driver leaves out).
func BenchmarkPipelineCeiling(b *testing.B) {
	fx := &pipeFx{h: load.CeilingHandler, addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}}
	uri := "http://127.0.0.1:8080/storefront/v1/events/evt_ceiling/orders"
	fx.pipeRun(b, 201, func(i int, r *fasthttp.Request) {
		pipePost(r, uri, "pk_ceiling")
		r.SetBody(orderJSON(r.Body(), i, "tt_01m80je08a0hs5x214cz7we1b7"))
	})
}
