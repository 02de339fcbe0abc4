package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/valyala/fasthttp"

	"ticketd/bench/load"
)

// chaosTimeout bounds every request of a chaos run: a service that takes
// longer has failed the "prompt answer" rule anyway, and a worker must not
// sit out a phase on one request.
const chaosTimeout = 5 * time.Second

func newChaosClient(addr string, conns int) *fasthttp.HostClient {
	return &fasthttp.HostClient{
		Addr: addr, MaxConns: conns, MaxConnWaitTimeout: chaosTimeout,
		ReadTimeout: chaosTimeout, WriteTimeout: chaosTimeout,
		MaxIdemponentCallAttempts: 1, MaxResponseBodySize: 1 << 20,
	}
}

// statusCounts counts answers by status (0: transport error or timeout).
type statusCounts struct {
	mu sync.Mutex
	m  map[int]int64
}

func (s *statusCounts) add(st int) {
	s.mu.Lock()
	if s.m == nil {
		s.m = map[int]int64{}
	}
	s.m[st]++
	s.mu.Unlock()
}

func (s *statusCounts) snapshot() map[int]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int]int64, len(s.m))
	for k, v := range s.m {
		out[k] = v
	}
	return out
}

// chaosFlood is a closed-loop order flood on two events: every fourth
// order goes to the small event, which sells out early, so an oversell
// would show; the rest keep the log busy. It is bounded by count and by
// time, and backs off after a failed request so a dead server is not
// hammered by a busy loop.
type chaosFlood struct {
	hc      *fasthttp.HostClient
	base    string
	pk      string
	big     load.EventSetup
	small   load.EventSetup
	prefix  string
	max     int64
	conns   int
	rate    float64     // orders per second at most; 0: as fast as answered
	burst   atomic.Bool // while set, the rate does not apply
	until   time.Time
	sent    atomic.Int64
	status  statusCounts
	ackBig  load.Acks
	ackSm   load.Acks
	stopped atomic.Bool
}

func (f *chaosFlood) run(ctx context.Context) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var tokens chan struct{}
	if f.rate > 0 {
		tokens = make(chan struct{}, f.conns)
		tctx, stopTokens := context.WithDeadline(ctx, f.until)
		defer stopTokens()
		go func() {
			defer close(tokens)
			interval := time.Duration(float64(time.Second) / f.rate)
			start := time.Now()
			for i := 0; ; i++ {
				select {
				case <-tctx.Done():
					return
				case <-time.After(time.Until(start.Add(time.Duration(i) * interval))):
				}
				select {
				case tokens <- struct{}{}:
				case <-tctx.Done():
					return
				}
			}
		}()
	}
	for range f.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			backoff := time.Duration(0)
			for ctx.Err() == nil && !f.stopped.Load() && time.Now().Before(f.until) {
				if tokens != nil && !f.burst.Load() {
					if _, ok := <-tokens; !ok {
						return
					}
				}
				i := next.Add(1) - 1
				if i >= f.max {
					return
				}
				e, ack := f.big, &f.ackBig
				if i%4 == 3 {
					e, ack = f.small, &f.ackSm
				}
				req.Reset()
				load.SetRequest(req, "POST", f.base+"/storefront/v1/events/"+e.EventID+"/orders", f.pk)
				load.OrderBody(req, f.prefix, i, e.TicketTypeID)
				err := f.hc.DoTimeout(req, resp, chaosTimeout)
				f.sent.Add(1)
				st := 0
				if err == nil {
					st = resp.StatusCode()
				}
				f.status.add(st)
				if st == 200 || st == 201 {
					ack.Add(resp.Body())
				}
				if st == 0 || st >= 500 {
					backoff = min(max(2*backoff, 10*time.Millisecond), 250*time.Millisecond)
					time.Sleep(backoff)
				} else {
					backoff = 0
				}
			}
		}()
	}
	wg.Wait()
}

// readSample is one read of the read-only client.
type readSample struct {
	due    time.Time
	us     int64
	status int
}

// chaosReader is the read-only client: catalog and availability GETs at a
// fixed rate, open loop (latency from each request's due time, so a stall
// delays every request behind it and shows). Every fourth read is the
// small event's availability, checked against its capacity.
type chaosReader struct {
	hc      *fasthttp.HostClient
	base    string
	sk, pk  string
	big     load.EventSetup
	small   load.EventSetup
	rate    float64
	workers int

	mu      sync.Mutex
	samples []readSample
	over    atomic.Int64 // availability reads showing held + confirmed above capacity
	maxSold atomic.Int64
}

func (r *chaosReader) run(ctx context.Context, until time.Time) {
	jobs := make(chan readSample, 1024)
	var wg sync.WaitGroup
	for range r.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			n := 0
			for j := range jobs {
				n++
				req.Reset()
				small := false
				switch n % 4 {
				case 0:
					small = true
					load.SetRequest(req, "GET", r.base+"/v1/events/"+r.small.EventID+"/ticket-types/"+r.small.TicketTypeID+"/availability", r.sk)
				case 1:
					load.SetRequest(req, "GET", r.base+"/v1/events/"+r.big.EventID+"/ticket-types/"+r.big.TicketTypeID+"/availability", r.sk)
				default:
					load.SetRequest(req, "GET", r.base+"/storefront/v1/events/"+r.big.EventID, r.pk)
				}
				err := r.hc.DoTimeout(req, resp, chaosTimeout)
				j.us = max(1, time.Since(j.due).Microseconds())
				if err == nil {
					j.status = resp.StatusCode()
					if small && j.status == 200 {
						var a load.Availability
						if json.Unmarshal(resp.Body(), &a) == nil {
							sold := int64(a.Held + a.Confirmed)
							if sold > int64(a.Capacity) {
								r.over.Add(1)
							}
							if sold > r.maxSold.Load() {
								r.maxSold.Store(sold)
							}
						}
					}
				}
				r.mu.Lock()
				r.samples = append(r.samples, j)
				r.mu.Unlock()
			}
		}()
	}
	interval := time.Duration(float64(time.Second) / r.rate)
	start := time.Now()
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * interval)
		if !due.Before(until) || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Until(due))
		jobs <- readSample{due: due}
	}
	close(jobs)
	wg.Wait()
}

// ReadStats are the read-only client's latencies over a window, in ms.
type ReadStats struct {
	Requests int64 `json:"requests"`
	Failed   int64 `json:"failed"` // not 200: transport errors, timeouts, 5xx
	// Status counts the answers by status (0: transport error or timeout).
	Status map[int]int64 `json:"status"`
	P50    float64       `json:"p50Ms"`
	P99    float64       `json:"p99Ms"`
	Max    float64       `json:"maxMs"`
}

// stats summarises the samples due in [from, to); zero times are open.
func (r *chaosReader) stats(from, to time.Time) ReadStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return readStats(r.samples, from, to)
}

func readStats(samples []readSample, from, to time.Time) ReadStats {
	h := hdrhistogram.New(1, load.MaxLatencyUs, 3)
	st := ReadStats{Status: map[int]int64{}}
	for _, s := range samples {
		if (!from.IsZero() && s.due.Before(from)) || (!to.IsZero() && !s.due.Before(to)) {
			continue
		}
		_ = h.RecordValue(min(s.us, load.MaxLatencyUs))
		st.Requests++
		st.Status[s.status]++
		if s.status != 200 {
			st.Failed++
		}
	}
	if st.Requests > 0 {
		ms := func(us int64) float64 { return float64(us) / 1000 }
		st.P50, st.P99, st.Max = ms(h.ValueAtQuantile(50)), ms(h.ValueAtQuantile(99)), ms(h.Max())
	}
	return st
}

// probe is one write of the prober.
type probe struct {
	sent, done time.Time
	ok         bool
}

// chaosProber places one order every interval on the big event, so the
// moment writes succeed again is known to within an interval whatever the
// flood is doing. Its acknowledged orders join the flood's.
type chaosProber struct {
	hc       *fasthttp.HostClient
	base, pk string
	e        load.EventSetup
	prefix   string
	interval time.Duration
	ack      *load.Acks

	mu     sync.Mutex
	probes []probe
}

func (p *chaosProber) run(ctx context.Context, stop <-chan struct{}, until time.Time) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	for i := int64(0); ctx.Err() == nil && time.Now().Before(until); i++ {
		req.Reset()
		load.SetRequest(req, "POST", p.base+"/storefront/v1/events/"+p.e.EventID+"/orders", p.pk)
		load.OrderBody(req, p.prefix, i, p.e.TicketTypeID)
		pr := probe{sent: time.Now()}
		err := p.hc.DoTimeout(req, resp, 2*time.Second)
		pr.done = time.Now()
		if err == nil && (resp.StatusCode() == 201 || resp.StatusCode() == 200) {
			pr.ok = true
			p.ack.Add(resp.Body())
		}
		p.mu.Lock()
		p.probes = append(p.probes, pr)
		p.mu.Unlock()
		select {
		case <-stop:
			return
		case <-time.After(time.Until(pr.sent.Add(p.interval))):
		}
	}
}

// backAfter returns when the first write sent at or after t succeeded
// (zero when none did yet).
func (p *chaosProber) backAfter(t time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return writesBack(p.probes, t)
}

func writesBack(probes []probe, t time.Time) time.Time {
	for _, pr := range probes {
		if pr.ok && !pr.sent.Before(t) {
			return pr.done
		}
	}
	return time.Time{}
}

// outage returns how long writes failed from the first failed probe at or
// after t to the next success (to the last probe when none followed).
func (p *chaosProber) outage(t time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return writeOutage(p.probes, t)
}

func writeOutage(probes []probe, t time.Time) time.Duration {
	var first time.Time
	for _, pr := range probes {
		if pr.sent.Before(t) {
			continue
		}
		if !pr.ok && first.IsZero() {
			first = pr.sent
		}
		if pr.ok && !first.IsZero() {
			return pr.done.Sub(first)
		}
	}
	if !first.IsZero() {
		return probes[len(probes)-1].done.Sub(first)
	}
	return 0
}

// lostOrders reads back every acknowledged order of e: the order list
// first, then each order missing from it on its own. It returns how many
// were checked and how many are missing.
func lostOrders(c *load.Client, sk string, e load.EventSetup, ack *load.Acks) (checked, missing int, err error) {
	ack.Mu.Lock()
	all := append([]string(nil), ack.All...)
	ack.Mu.Unlock()
	listed := make(map[string]bool, len(all))
	err = c.Paginate("/v1/events/"+e.EventID+"/orders", sk, 1+len(all)/100+1000, func(raw json.RawMessage) error {
		var o struct {
			OrderNumber string `json:"orderNumber"`
		}
		if err := json.Unmarshal(raw, &o); err != nil {
			return err
		}
		listed[o.OrderNumber] = true
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	for _, n := range all {
		if listed[n] {
			continue
		}
		st, _, err := c.Do("GET", "/v1/events/"+e.EventID+"/orders/"+url.PathEscape(n), sk, nil)
		if err != nil {
			return 0, 0, err
		}
		if st != 200 {
			missing++
		}
	}
	return len(all), missing, nil
}

var statusPaid = []byte(`"status":"paid"`)

// mailFlood places and confirms free orders at a fixed rate, some of them
// for addresses the relay refuses, and records when each good address's
// order was confirmed (its ticket mail is owed from then).
type mailFlood struct {
	hc       *fasthttp.HostClient
	base, pk string
	e        load.EventSetup
	n        int
	rate     float64
	until    time.Time
	status   statusCounts
	ack      load.Acks

	mu        sync.Mutex
	confirmed map[string]time.Time // good address -> confirmed at
	bad       int                  // confirmed orders of refused addresses
}

// mailAddress is buyer i's address: one in ten in a domain the relay
// answers 450 for, one in ten the single address it answers 550 for.
func mailAddress(i int) (addr string, good bool) {
	switch i % 10 {
	case 3:
		return "m" + strconv.Itoa(i) + "@" + relayTempFailDomain, false
	case 7:
		return relayRefusedAddress, false
	}
	return "m" + strconv.Itoa(i) + "@chaos.example", true
}

func (m *mailFlood) run(ctx context.Context) {
	m.confirmed = map[string]time.Time{}
	jobs := make(chan int, 64)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			for i := range jobs {
				addr, good := mailAddress(i)
				req.Reset()
				load.SetRequest(req, "POST", m.base+"/storefront/v1/events/"+m.e.EventID+"/orders", m.pk)
				req.SetBodyString(`{"email":"` + addr + `","name":"Buyer","items":[{"itemType":"registration_type","itemId":"` + m.e.TicketTypeID + `","quantity":1}]}`)
				st := 0
				if err := m.hc.DoTimeout(req, resp, chaosTimeout); err == nil {
					st = resp.StatusCode()
				}
				m.status.add(st)
				if st != 201 && st != 200 {
					continue
				}
				m.ack.Add(resp.Body())
				num := orderNumberOf(resp.Body())
				req.Reset()
				load.SetRequest(req, "POST", m.base+"/storefront/v1/events/"+m.e.EventID+"/orders/"+num+"/confirm", m.pk)
				req.SetBodyString(`{}`)
				st = 0
				if err := m.hc.DoTimeout(req, resp, chaosTimeout); err == nil {
					st = resp.StatusCode()
				}
				m.status.add(st)
				if st == 200 && bytes.Contains(resp.Body(), statusPaid) {
					m.mu.Lock()
					if good {
						m.confirmed[addr] = time.Now()
					} else {
						m.bad++
					}
					m.mu.Unlock()
				}
			}
		}()
	}
	interval := time.Duration(float64(time.Second) / m.rate)
	start := time.Now()
	for i := 0; i < m.n && ctx.Err() == nil && time.Now().Before(m.until); i++ {
		time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
		jobs <- i
	}
	close(jobs)
	wg.Wait()
}

func orderNumberOf(body []byte) string {
	i := bytes.Index(body, load.OrderNumberKey)
	if i < 0 {
		return ""
	}
	rest := body[i+len(load.OrderNumberKey):]
	if j := bytes.IndexByte(rest, '"'); j >= 0 {
		return string(rest[:j])
	}
	return ""
}

// readyObs is one answer of /readyz (0: no answer).
type readyObs struct {
	at     time.Time
	status int
}

// readyPoller asks /readyz every interval: whether the service says it
// cannot take writes while it cannot.
type readyPoller struct {
	hc       *fasthttp.HostClient
	base     string
	interval time.Duration

	mu  sync.Mutex
	obs []readyObs
}

func (p *readyPoller) run(ctx context.Context, stop <-chan struct{}, until time.Time) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	for ctx.Err() == nil && time.Now().Before(until) {
		t := time.Now()
		req.Reset()
		req.SetRequestURI(p.base + "/readyz")
		st := 0
		if err := p.hc.DoTimeout(req, resp, time.Second); err == nil {
			st = resp.StatusCode()
		}
		p.mu.Lock()
		p.obs = append(p.obs, readyObs{at: t, status: st})
		p.mu.Unlock()
		select {
		case <-stop:
			return
		case <-time.After(time.Until(t.Add(p.interval))):
		}
	}
}

// ReadyStats is what /readyz answered during a fault.
type ReadyStats struct {
	Status map[int]int64 `json:"status"` // answers by status during the fault (0: none)
	// First503S is from the fault's start to the first 503; -1 when none.
	First503S float64 `json:"first503Seconds"`
}

func (p *readyPoller) stats(from, to time.Time) ReadyStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	rs := ReadyStats{Status: map[int]int64{}, First503S: -1}
	for _, o := range p.obs {
		if o.at.Before(from) || !o.at.Before(to) {
			continue
		}
		rs.Status[o.status]++
		if o.status == 503 && rs.First503S < 0 {
			rs.First503S = o.at.Sub(from).Seconds()
		}
	}
	return rs
}
