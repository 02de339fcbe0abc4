package load

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/valyala/fasthttp"
)

// Load is one measured run: closed-loop when Rate is 0 (Conns requests in
// flight, each sent as soon as the previous answered), else open-loop at
// Rate requests per second with up to Conns in flight, latency measured
// from each request's intended send time.
type Load struct {
	Name     string
	Client   *Client
	Conns    int
	Duration time.Duration
	Rate     float64
	// Make fills request i; false means there is no more work and ends the
	// run early. It is called concurrently.
	Make func(i int64, req *fasthttp.Request) bool
	// Check sees every answer (status 0 on a transport error). It is
	// called concurrently; body is only valid during the call.
	Check func(i int64, status int, body []byte)
	// Kind, when set, names request i's kind; the result then also gives
	// each kind's latencies (Result.Kinds). It is called concurrently.
	Kind func(i int64) string
	// ServerPID, when set, is the server process whose CPU time the run
	// reports per request, beside this process's own (Result.ServerCPU...,
	// ClientCPU...).
	ServerPID int
}

// Result is what a Load measured. Latencies are in milliseconds.
type Result struct {
	Name         string  `json:"name"`
	Mode         string  `json:"mode"` // closed or open
	Conns        int     `json:"conns"`
	TargetRPS    float64 `json:"targetRps,omitempty"`
	RPS          float64 `json:"rps"`
	CeilingRatio float64 `json:"ceilingRatio,omitempty"`
	// CeilingRPS is the reference the ratio is taken against: the ceiling
	// measured right before this scenario.
	CeilingRPS float64 `json:"ceilingRps,omitempty"`
	Requests   int64   `json:"requests"`
	Errors     int64   `json:"errors"` // transport errors
	// Unsent counts open-loop requests still queued at the cutoff (the end
	// of the schedule plus max(2s, Duration)): the server had fallen that
	// far behind. Their latency is recorded as the wait so far, a lower
	// bound.
	Unsent  int64         `json:"unsent,omitempty"`
	Status  map[int]int64 `json:"status"`
	Seconds float64       `json:"seconds"`
	P50     float64       `json:"p50Ms"`
	P99     float64       `json:"p99Ms"`
	P999    float64       `json:"p999Ms"`
	Max     float64       `json:"maxMs"`
	Mean    float64       `json:"meanMs"`
	// CPU time per request of the server process and of the load
	// generator (this process) during the run, and the cores each used on
	// average: what a ratio to the ceiling is made of, on a machine whose
	// speed drifts (zero when Load.ServerPID was not set).
	ServerCPUUsPerRequest float64 `json:"serverCpuUsPerRequest,omitempty"`
	ClientCPUUsPerRequest float64 `json:"clientCpuUsPerRequest,omitempty"`
	ServerCores           float64 `json:"serverCores,omitempty"`
	ClientCores           float64 `json:"clientCores,omitempty"`
	// Kinds are the latencies of each kind of request (Load.Kind).
	Kinds map[string]KindLatency `json:"kinds,omitempty"`
}

// KindLatency is the latency of one kind of request in a run, in ms.
type KindLatency struct {
	Requests int64   `json:"requests"`
	P50      float64 `json:"p50Ms"`
	P99      float64 `json:"p99Ms"`
	Max      float64 `json:"maxMs"`
}

const MaxLatencyUs = 120_000_000 // two minutes

type worker struct {
	hist   *hdrhistogram.Histogram
	kinds  map[string]*hdrhistogram.Histogram
	status map[int]int64
	errs   int64
	n      int64
	unsent int64
}

func newWorker() *worker {
	return &worker{hist: hdrhistogram.New(1, MaxLatencyUs, 3), status: map[int]int64{}}
}

func (w *worker) send(l *Load, i int64, from time.Time, req *fasthttp.Request, resp *fasthttp.Response) {
	err := l.Client.HC.DoTimeout(req, resp, time.Minute)
	us := max(1, min(time.Since(from).Microseconds(), MaxLatencyUs))
	_ = w.hist.RecordValue(us)
	if l.Kind != nil {
		k := l.Kind(i)
		h := w.kinds[k]
		if h == nil {
			if w.kinds == nil {
				w.kinds = map[string]*hdrhistogram.Histogram{}
			}
			h = hdrhistogram.New(1, MaxLatencyUs, 3)
			w.kinds[k] = h
		}
		_ = h.RecordValue(us)
	}
	w.n++
	st := 0
	if err != nil {
		w.errs++
	} else {
		st = resp.StatusCode()
		w.status[st]++
	}
	if l.Check != nil {
		l.Check(i, st, resp.Body())
	}
}

// Run performs the load and returns its result.
func (l *Load) Run() Result {
	workers := make([]*worker, l.Conns)
	for i := range workers {
		workers[i] = newWorker()
	}
	var next atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	cpu0 := SampleCPU(l.ServerPID)
	start := time.Now()
	deadline := start.Add(l.Duration)
	if l.Rate <= 0 {
		for _, w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				for !stop.Load() && time.Now().Before(deadline) {
					i := next.Add(1) - 1
					req.Reset()
					if !l.Make(i, req) {
						stop.Store(true)
						return
					}
					w.send(l, i, time.Now(), req, resp)
				}
			}()
		}
	} else {
		type job struct {
			i        int64
			intended time.Time
		}
		jobs := make(chan job, 1<<16)
		cutoff := deadline.Add(max(2*time.Second, l.Duration))
		for _, w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				for j := range jobs {
					if stop.Load() {
						continue
					}
					if time.Now().After(cutoff) {
						us := time.Since(j.intended).Microseconds()
						_ = w.hist.RecordValue(max(1, min(us, MaxLatencyUs)))
						w.unsent++
						continue
					}
					req.Reset()
					if !l.Make(j.i, req) {
						stop.Store(true)
						continue
					}
					w.send(l, j.i, j.intended, req, resp)
				}
			}()
		}
		// The schedule is fixed in advance: request i is due at
		// start + i/Rate whatever happened before, so a stall shows up as
		// latency of every request it delayed.
		interval := time.Duration(float64(time.Second) / l.Rate)
		for i := int64(0); !stop.Load(); i++ {
			due := start.Add(time.Duration(i) * interval)
			if !due.Before(deadline) {
				break
			}
			if d := time.Until(due); d > 200*time.Microsecond {
				time.Sleep(d)
			}
			jobs <- job{i: i, intended: due}
		}
		close(jobs)
	}
	wg.Wait()
	elapsed := time.Since(start)
	if l.Rate > 0 && elapsed < l.Duration {
		elapsed = l.Duration
	}
	r := l.result(workers, elapsed)
	r.SetCPU(cpu0, SampleCPU(l.ServerPID))
	return r
}

func (l *Load) result(workers []*worker, elapsed time.Duration) Result {
	h := hdrhistogram.New(1, MaxLatencyUs, 3)
	r := Result{Name: l.Name, Mode: "closed", Conns: l.Conns, Status: map[int]int64{}, Seconds: elapsed.Seconds()}
	if l.Rate > 0 {
		r.Mode, r.TargetRPS = "open", l.Rate
	}
	for _, w := range workers {
		h.Merge(w.hist)
		r.Requests += w.n
		r.Errors += w.errs
		r.Unsent += w.unsent
		for k, v := range w.status {
			r.Status[k] += v
		}
	}
	r.RPS = float64(r.Requests) / elapsed.Seconds()
	ms := func(us int64) float64 { return float64(us) / 1000 }
	kinds := map[string]*hdrhistogram.Histogram{}
	for _, w := range workers {
		for k, kh := range w.kinds {
			if kinds[k] == nil {
				kinds[k] = hdrhistogram.New(1, MaxLatencyUs, 3)
			}
			kinds[k].Merge(kh)
		}
	}
	for k, kh := range kinds {
		if r.Kinds == nil {
			r.Kinds = map[string]KindLatency{}
		}
		r.Kinds[k] = KindLatency{Requests: kh.TotalCount(), P50: ms(kh.ValueAtQuantile(50)), P99: ms(kh.ValueAtQuantile(99)), Max: ms(kh.Max())}
	}
	r.P50, r.P99, r.P999 = ms(h.ValueAtQuantile(50)), ms(h.ValueAtQuantile(99)), ms(h.ValueAtQuantile(99.9))
	r.Max, r.Mean = ms(h.Max()), h.Mean()/1000
	return r
}
