package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/bench/load"
)

// Harness runs the scenarios of one Config and fills a Report.
type Harness struct {
	cfg *Config
	rep *Report
	seq atomic.Int64 // data dir numbering

	// The ceiling server stays up for the whole run: each throughput is
	// compared with a ceiling measured right before it (ref), since the
	// machine's speed drifts over minutes (one full run saw the ceiling
	// anywhere between 23k and 36k req/s).
	ceilSrv *load.Server
	ceilC   *load.Client
	ref     float64
}

// Run runs every enabled scenario and returns the report. A scenario that
// cannot run records a failed check and the next one still runs.
func Run(cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	h := &Harness{cfg: &cfg, rep: newReport(&cfg)}
	h.rep.Durability = &DurabilityReport{}
	steps := []struct {
		name string
		run  func() error
	}{
		{"ceiling", h.ceiling},
		{"flash-sale", h.ticketdScenarios},
		{"nosync", h.nosync},
		{"profile", h.profile},
		{"recovery", h.recovery},
		{"scale", h.scale},
	}
	defer func() {
		if h.ceilSrv != nil {
			_ = h.ceilSrv.Stop()
		}
	}()
	for _, s := range steps {
		if s.name != "flash-sale" && !cfg.enabled(s.name) {
			continue
		}
		if s.name != "flash-sale" {
			h.logf("== %s", s.name)
		}
		if err := s.run(); err != nil {
			h.logf("   %s failed: %v", s.name, err)
			h.rep.check(s.name, "scenario ran", false, "%v", err)
		}
	}
	h.targets()
	return h.rep, nil
}

func (h *Harness) logf(format string, args ...any) {
	fmt.Fprintf(h.cfg.Log, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func (h *Harness) dir(name string) string {
	return filepath.Join(h.cfg.WorkDir, fmt.Sprintf("%02d-%s", h.seq.Add(1), name))
}

func (h *Harness) logFile(name string) string {
	return filepath.Join(h.cfg.WorkDir, "logs", name+".log")
}

func (h *Harness) startTicketd(name, dataDir string, env []string, extra ...string) (*load.Server, error) {
	args := []string{"serve"}
	if h.cfg.TicketdRole != "" {
		args, env = nil, append(env, load.RoleEnv+"="+h.cfg.TicketdRole)
	}
	return load.StartServer(load.ServerSpec{Bin: h.cfg.TicketdBin, Args: args, DataDir: dataDir,
		LogFile: h.logFile(name), Env: env, Extra: extra})
}

func (h *Harness) record(res load.Result) load.Result {
	if res.CeilingRPS == 0 && h.ref > 0 {
		res.CeilingRPS = h.ref
	}
	res = h.rep.add(res)
	h.logf("   %-28s %-6s %7.0f req/s (x%.2f)  p50 %6.2f  p99 %7.2f  p99.9 %7.2f  max %7.2f ms  %s err %d unsent %d",
		res.Name, res.Mode, res.RPS, res.CeilingRatio, res.P50, res.P99, res.P999, res.Max, load.Statuses(res.Status), res.Errors, res.Unsent)
	return res
}

// drop is a flash-sale load: every request a new buyer.
func (h *Harness) drop(name string, c *load.Client, s *load.Server, e load.EventSetup, rate float64, ack *load.Acks, prefix string) *load.Load {
	uri := s.URL + "/storefront/v1/events/" + e.EventID + "/orders"
	return &load.Load{Name: name, Client: c, Conns: h.cfg.Conns, Duration: h.dur(rate), Rate: rate, ServerPID: s.Pid(),
		Make: func(i int64, req *fasthttp.Request) bool {
			load.SetRequest(req, "POST", uri, s.PublishableKey)
			load.OrderBody(req, prefix, i, e.TicketTypeID)
			return true
		},
		Check: func(_ int64, st int, body []byte) {
			if st == 201 || st == 200 {
				ack.Add(body)
			}
		}}
}

func (h *Harness) dur(rate float64) time.Duration {
	if rate > 0 {
		return h.cfg.OpenDuration
	}
	return h.cfg.Duration
}

func (h *Harness) ceiling() error {
	s, err := load.StartServer(load.ServerSpec{Bin: h.cfg.SelfBin, Env: []string{load.RoleEnv + "=" + load.RoleCeiling}, Bare: true, LogFile: h.logFile("ceiling")})
	if err != nil {
		return err
	}
	c, err := s.Client(h.cfg.Conns)
	if err != nil {
		_ = s.Stop()
		return err
	}
	h.ceilSrv, h.ceilC = s, c
	res := h.measureCeiling("ceiling")
	h.rep.CeilingRPS = res.RPS
	for i := range h.rep.Runs {
		h.rep.Runs[i].CeilingRatio = h.rep.Runs[i].RPS / res.RPS
	}
	return nil
}

// ticketdScenarios run on one real ticketd: flash sale, sold out, check-in
// burst, integrator mix, then the kill -9 drop.
func (h *Harness) measureCeiling(name string) load.Result {
	var ack load.Acks
	res := h.drop(name, h.ceilC, h.ceilSrv, load.EventSetup{EventID: "evt_ceiling", TicketTypeID: "tt_01m80je08a0hs5x214cz7we1b7"}, 0, &ack, "c").Run()
	res.CeilingRPS = res.RPS
	h.ref = res.RPS
	return h.record(res)
}

// reference measures the ceiling again right before scenario name; its
// throughputs are compared with that figure.
func (h *Harness) reference(name string) {
	if h.ceilSrv != nil {
		h.measureCeiling("ceiling@" + name)
	}
}

func (h *Harness) ticketdScenarios() error {
	names := []string{"flash-sale", "paid-flash-sale", "console-dashboards", "feed-follow", "sold-out", "queue-drop", "checkin-burst", "door-sync", "integrator-mix", "kill9"}
	any := false
	for _, n := range names {
		any = any || h.cfg.enabled(n)
	}
	if !any {
		return nil
	}
	dir := h.dir("ticketd")
	s, err := h.startTicketd("ticketd", dir, nil)
	if err != nil {
		return err
	}
	defer func() {
		if s != nil {
			_ = s.Stop()
		}
	}()
	c, err := s.Client(h.cfg.Conns + h.cfg.MixConns)
	if err != nil {
		return err
	}
	for _, st := range []struct {
		name string
		run  func(*load.Server, *load.Client) error
	}{
		{"flash-sale", h.flashSale}, {"paid-flash-sale", h.paidFlashSale}, {"console-dashboards", h.consoleDashboards}, {"feed-follow", h.feedFollow}, {"sold-out", h.soldOut}, {"queue-drop", h.queueDrop}, {"checkin-burst", h.checkinBurst}, {"door-sync", h.doorSync}, {"integrator-mix", h.integratorMix},
	} {
		if !h.cfg.enabled(st.name) {
			continue
		}
		h.logf("== %s", st.name)
		// The background work the previous scenario left (a snapshot of
		// its event being built, deletions being flushed) is not this
		// scenario's cost.
		if err := settle(c); err != nil {
			return err
		}
		if st.name != "integrator-mix" {
			h.reference(st.name)
		}
		if err := st.run(s, c); err != nil {
			h.logf("   %s failed: %v", st.name, err)
			h.rep.check(st.name, "scenario ran", false, "%v", err)
		}
	}
	if h.cfg.enabled("kill9") {
		h.logf("== kill9")
		err := h.kill9(s, c)
		s = nil // kill9 owns the process now
		if err != nil {
			h.logf("   kill9 failed: %v", err)
			h.rep.check("kill9", "scenario ran", false, "%v", err)
		}
	}
	return nil
}

// verifyOrders checks capacity and that every acknowledged order is there.
func (h *Harness) verifyOrders(scenario string, c *load.Client, s *load.Server, e load.EventSetup, ack *load.Acks) error {
	a, err := c.Availability(s.SecretKey, e)
	if err != nil {
		return err
	}
	h.rep.check(scenario, "no oversell", a.Held+a.Confirmed <= a.Capacity, "capacity %d, held %d, confirmed %d", a.Capacity, a.Held, a.Confirmed)
	h.rep.check(scenario, "holds equal acknowledged orders", a.Held+a.Confirmed == ack.N(), "acknowledged %d, held+confirmed %d", ack.N(), a.Held+a.Confirmed)
	listed := make(map[string]bool, ack.N())
	err = c.Paginate("/v1/events/"+e.EventID+"/orders", s.SecretKey, 1+ack.N()/100+10, func(raw json.RawMessage) error {
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
		return err
	}
	missing := 0
	distinct := make(map[string]struct{}, ack.N())
	for _, n := range ack.All {
		if !listed[n] {
			missing++
		}
		distinct[n] = struct{}{}
	}
	h.rep.check(scenario, "every 2xx hold present", missing == 0, "%d acknowledged, %d listed, %d missing", ack.N(), len(listed), missing)
	// An order number names the hosted order page: two orders sharing one
	// would show a buyer another's order.
	h.rep.check(scenario, "order numbers unique", len(distinct) == ack.N(), "%d acknowledged, %d distinct numbers", ack.N(), len(distinct))
	return nil
}

func (h *Harness) flashSale(s *load.Server, c *load.Client) error {
	e, err := c.CreateEvent(s.SecretKey, "Flash sale", 10_000_000)
	if err != nil {
		return err
	}
	var ack load.Acks
	m0, ok, err := c.Scrape()
	if err != nil {
		return err
	}
	res := h.record(h.drop("flash-sale", c, s, e, 0, &ack, "fs").Run())
	d := h.rep.Durability
	d.SyncRPS, d.SyncP99Ms, d.MetricsAvailable = res.RPS, res.P99, ok
	if ok {
		m1, _, err := c.Scrape()
		if err != nil {
			return err
		}
		d.Sync = load.DurabilityBetween(m0, m1, res.Seconds)
	}
	if n := h.cfg.RefConns; n > 0 && n != h.cfg.Conns {
		if err := settle(c); err != nil {
			return err
		}
		l := h.drop(fmt.Sprintf("flash-sale@%dconns", n), c, s, e, 0, &ack, "fr")
		l.Conns = n
		h.record(l.Run())
	}
	for i, lv := range h.cfg.Levels {
		rate := lv * res.RPS
		h.record(h.drop(fmt.Sprintf("flash-sale@%.0f%%", lv*100), c, s, e, rate, &ack, "fs"+strconv.Itoa(i)+"-").Run())
	}
	// Every order with an Idempotency-Key, as a careful storefront sends
	// them: the key's answer is committed with the order (decisions §20).
	if err := settle(c); err != nil {
		return err
	}
	l := h.drop("flash-sale-keyed", c, s, e, 0, &ack, "fk")
	mk := l.Make
	l.Make = func(i int64, req *fasthttp.Request) bool {
		ok := mk(i, req)
		req.Header.Set("Idempotency-Key", "fk-"+strconv.FormatInt(i, 10))
		return ok
	}
	keyed := h.record(l.Run())
	h.rep.check("flash-sale", "keyed orders (Idempotency-Key) to unkeyed", true, "%.2f: keyed %.0f orders/s, unkeyed %.0f",
		keyed.RPS/res.RPS, keyed.RPS, res.RPS)
	return h.verifyOrders("flash-sale", c, s, e, &ack)
}

func (h *Harness) soldOut(s *load.Server, c *load.Client) error {
	e, err := c.CreateEvent(s.SecretKey, "Sold out", h.cfg.SoldOutCapacity)
	if err != nil {
		return err
	}
	var ack load.Acks
	res := h.record(h.drop("sold-out", c, s, e, 0, &ack, "so").Run())
	if res.Requests > int64(e.Capacity) {
		h.rep.check("sold-out", "exactly capacity sold", ack.N() == e.Capacity, "capacity %d, acknowledged %d of %d requests", e.Capacity, ack.N(), res.Requests)
	}
	return h.verifyOrders("sold-out", c, s, e, &ack)
}

// scanPool hands out check-in scans: fresh registrations in order, and a
// share of repeats of scans already handed out.
type scanPool struct {
	mu    sync.Mutex
	ids   []string
	next  int
	dup   float64
	fresh atomic.Int64
	dups  atomic.Int64
}

func (p *scanPool) pick(i int64) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	// A multiplicative hash of i decides, so runs are repeatable.
	u := float64((uint64(i)*0x9E3779B97F4A7C15)>>11) / float64(1<<53)
	if p.next > 0 && u < p.dup {
		p.dups.Add(1)
		return p.ids[int((uint64(i)*0xBF58476D1CE4E5B9)>>33)%p.next], true
	}
	if p.next >= len(p.ids) {
		return "", false
	}
	p.next++
	p.fresh.Add(1)
	return p.ids[p.next-1], true
}

func (p *scanPool) left() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ids) - p.next
}

func (p *scanPool) grow(ids []string) {
	p.mu.Lock()
	p.ids = append(p.ids, ids...)
	p.mu.Unlock()
}

func (h *Harness) scans(name string, c *load.Client, s *load.Server, e load.EventSetup, pool *scanPool, rate float64, conns int, created, repeated *atomic.Int64) *load.Load {
	uri := s.URL + "/v1/events/" + e.EventID + "/checkins"
	return &load.Load{Name: name, Client: c, Conns: conns, Duration: h.dur(rate), Rate: rate, ServerPID: s.Pid(),
		Make: func(i int64, req *fasthttp.Request) bool {
			id, ok := pool.pick(i)
			if !ok {
				return false
			}
			load.SetRequest(req, "POST", uri, s.SecretKey)
			req.SetBodyString(`{"registrationId":"` + id + `","subjectType":"event"}`)
			return true
		},
		Check: func(_ int64, st int, _ []byte) {
			switch st {
			case 201:
				created.Add(1)
			case 200:
				repeated.Add(1)
			}
		}}
}

func (h *Harness) checkinBurst(s *load.Server, c *load.Client) error {
	e, err := c.CreateEvent(s.SecretKey, "Doors", 10_000_000)
	if err != nil {
		return err
	}
	t0 := time.Now()
	ids, err := c.Register(s.SecretKey, e, "door", h.cfg.CheckinPool, 64)
	if err != nil {
		return err
	}
	h.logf("   %d registrations set up in %.1fs", len(ids), time.Since(t0).Seconds())
	// As before the open-loop levels below: the set-up's writes (the
	// snapshots they make due, their flushes and compactions) are not the
	// burst's to pay for.
	if err := settle(c); err != nil {
		return err
	}
	pool := &scanPool{ids: ids, dup: h.cfg.DuplicateShare}
	var created, repeated atomic.Int64
	res := h.record(h.scans("checkin-burst", c, s, e, pool, 0, h.cfg.Conns, &created, &repeated).Run())
	if pool.left() == 0 && res.Seconds < h.cfg.Duration.Seconds()/2 {
		h.rep.Notes = append(h.rep.Notes, "checkin-burst: the closed-loop run used up its registrations before its time; raise -checkin-pool")
	}
	for _, lv := range h.cfg.Levels {
		rate := lv * res.RPS
		need := int(rate*h.cfg.OpenDuration.Seconds()*(1-h.cfg.DuplicateShare)*1.2) + 100
		if left := pool.left(); left < need {
			more, err := c.Register(s.SecretKey, e, fmt.Sprintf("door%.0f-", lv*100), need-left, 64)
			if err != nil {
				return err
			}
			pool.grow(more)
			// The set-up's writes (and the snapshot they may make due)
			// are not the scans' to pay for.
			if err := settle(c); err != nil {
				return err
			}
		}
		h.record(h.scans(fmt.Sprintf("checkin-burst@%.0f%%", lv*100), c, s, e, pool, rate, h.cfg.Conns, &created, &repeated).Run())
	}
	// Duplicates alone: they must not write, so no fsync either. First let
	// the writes that trail the previous runs settle (a snapshot of the
	// event being built and saved, the audit log's buffered flush, the
	// webhook and mail queues' deletions), so the window holds the
	// duplicates' own syncs only.
	if err := settle(c); err != nil {
		return err
	}
	m0, ok, err := c.Scrape()
	if err != nil {
		return err
	}
	dupOnly := &scanPool{ids: pool.ids[:pool.next], next: pool.next, dup: 1}
	dres := h.scans("checkin-duplicates", c, s, e, dupOnly, 0, 16, &created, &repeated)
	dres.Duration = min(h.cfg.Duration, 2*time.Second)
	dr := h.record(dres.Run())
	if ok {
		m1, _, err := c.Scrape()
		if err != nil {
			return err
		}
		syncs := m1.Sum("ticketd_wal_syncs_total") - m0.Sum("ticketd_wal_syncs_total")
		h.rep.Durability.DuplicateScanSyncs, h.rep.Durability.DuplicateScans = syncs, dr.Requests
		h.rep.check("checkin-burst", "a duplicate scan costs no fsync", syncs == 0, "%d duplicate scans, %.0f fsyncs", dr.Requests, syncs)
	}
	// One check-in per registration and door.
	perReg := map[string]int{}
	total := 0
	err = c.Paginate("/v1/events/"+e.EventID+"/checkins", s.SecretKey, 10+int(created.Load())/100+10, func(raw json.RawMessage) error {
		var ck struct {
			RegistrationID string `json:"registrationId"`
			SubjectType    string `json:"subjectType"`
		}
		if err := json.Unmarshal(raw, &ck); err != nil {
			return err
		}
		perReg[ck.RegistrationID+"/"+ck.SubjectType]++
		total++
		return nil
	})
	if err != nil {
		return err
	}
	twice := 0
	for _, n := range perReg {
		if n > 1 {
			twice++
		}
	}
	h.rep.check("checkin-burst", "one check-in per registration and door", twice == 0 && total == len(perReg), "%d check-ins, %d registrations, %d with more than one", total, len(perReg), twice)
	h.rep.check("checkin-burst", "every 201 scan recorded", int64(total) == created.Load(), "%d answered 201, %d listed; %d answered 200 (already checked in)", created.Load(), total, repeated.Load())
	return nil
}

// mix runs the integrator's traffic on event e from a process of its own:
// the integrator is another client on another machine, so its requests
// must not queue behind the drop's client goroutines in the load
// generator's own scheduler (that would measure the load generator).
func (h *Harness) mix(name string, s *load.Server, e load.EventSetup, regs []string) (load.Result, error) {
	spec := load.MixSpec{Name: name, Base: s.URL, SecretKey: s.SecretKey, EventID: e.EventID, TicketTypeID: e.TicketTypeID,
		Registrations: regs, Rate: h.cfg.MixRate, Conns: h.cfg.MixConns, Duration: h.cfg.OpenDuration}
	in, err := json.Marshal(spec)
	if err != nil {
		return load.Result{}, err
	}
	cmd := exec.Command(h.cfg.SelfBin)
	cmd.Env = append(os.Environ(), load.RoleEnv+"="+load.RoleMix)
	cmd.Stdin = bytes.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return load.Result{}, fmt.Errorf("bench: integrator client: %v: %s", err, load.Truncate(errb.Bytes(), 500))
	}
	var r load.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return load.Result{}, fmt.Errorf("bench: integrator client answered %s: %w", load.Truncate(out.Bytes(), 200), err)
	}
	return r, nil
}

func (h *Harness) integratorMix(s *load.Server, c *load.Client) error {
	e, err := c.CreateEvent(s.SecretKey, "Integrator", 10_000_000)
	if err != nil {
		return err
	}
	regs, err := c.Register(s.SecretKey, e, "int", 200, 16)
	if err != nil {
		return err
	}
	// The p99 of 1,600 requests moves with one stall of the machine (in one
	// run a 40-80 ms stall lifted the solo p99 from a few to 40 ms, and the
	// ratio to 1x). The solo mix runs twice and the lower p99 is the
	// baseline: a noisy solo run can only make the ratio look worse.
	var solo [2]load.Result
	for i, name := range []string{"integrator-alone", "integrator-alone-2"} {
		if err := settle(c); err != nil {
			return err
		}
		r, err := h.mix(name, s, e, regs)
		if err != nil {
			return err
		}
		solo[i] = h.record(r)
	}
	alone, alone2 := solo[0], solo[1]
	base := min(alone.P99, alone2.P99)
	hot, err := c.CreateEvent(s.SecretKey, "Drop", 10_000_000)
	if err != nil {
		return err
	}
	var ack load.Acks
	// during runs the integrator's traffic while a drop of the given rate
	// (0: closed loop, as fast as the service answers) runs.
	during := func(name string, rate float64, prefix string) (load.Result, load.Result, error) {
		drop := h.drop(name+"-drop", c, s, hot, rate, &ack, prefix)
		drop.Duration = h.cfg.OpenDuration + time.Second
		if h.cfg.RefConns > 0 {
			// The drop beside the integrator is the one of the earlier
			// runs (128 buyers in flight): with 512 the run queue the
			// integrator waits in is four times as long (its p99 rose
			// from about 2x to about 20x alone in the one run measured).
			drop.Conns = h.cfg.RefConns
		}
		var dres load.Result
		done := make(chan struct{})
		go func() { dres = drop.Run(); close(done) }()
		time.Sleep(500 * time.Millisecond) // let the drop reach full speed
		mr, err := h.mix(name, s, e, regs)
		<-done
		if err != nil {
			return load.Result{}, load.Result{}, err
		}
		return h.record(mr), h.record(dres), nil
	}
	// A saturating drop keeps both cores busy all the time: then every
	// request, the integrator's too, waits for the Go scheduler to poll the
	// network (it does so only when a core runs out of work, or every 10 ms
	// from its monitor).
	sat, satDrop, err := during("integrator-during-drop", 0, "mx")
	if err != nil {
		return err
	}
	// The drop at 75% of that maximum is the loaded but not overloaded
	// service; 25% and 50% show where the ratio leaves 2x. The levels run
	// from the lowest up, so a level does not pay for the background work
	// (a snapshot of the hot event) that a heavier one left behind.
	rate := 0.75 * satDrop.RPS
	var last load.Result
	levels := []load.Result{alone, alone2, sat}
	h.rep.Integrator = &IntegratorReport{AloneP99Ms: base, DropRPS: rate,
		SaturatedP99Ms: sat.P99, SaturatedRatio: sat.P99 / base, SaturatedDropRPS: satDrop.RPS}
	for _, lv := range []float64{0.25, 0.5, 0.75} {
		if err := settle(c); err != nil {
			return err
		}
		mr, dr, err := during(fmt.Sprintf("integrator-during-drop@%.0f%%", lv*100), lv*satDrop.RPS, fmt.Sprintf("m%.0f", lv*100))
		if err != nil {
			return err
		}
		h.rep.Integrator.Levels = append(h.rep.Integrator.Levels, IntegratorLevel{Level: lv, DropRPS: dr.RPS, DropP99Ms: dr.P99, P99Ms: mr.P99, Ratio: mr.P99 / base})
		levels = append(levels, mr)
		last = mr
	}
	h.rep.Integrator.DuringP99Ms, h.rep.Integrator.Ratio = last.P99, last.P99/base
	for _, r := range levels {
		bad := r.Errors
		for st, n := range r.Status {
			if st >= 300 {
				bad += n
			}
		}
		h.rep.check("integrator-mix", "every "+r.Name+" request succeeded", bad == 0, "%d of %d failed (%s)", bad, r.Requests, load.Statuses(r.Status))
	}
	return h.verifyOrders("integrator-mix", c, s, hot, &ack)
}

// kill9 kills the service with SIGKILL in the middle of a drop, restarts it
// on the same data dir and checks every acknowledged order.
func (h *Harness) kill9(s *load.Server, c *load.Client) error {
	e, err := c.CreateEvent(s.SecretKey, "Kill -9", 10_000_000)
	if err != nil {
		s.Kill()
		return err
	}
	var ack load.Acks
	l := h.drop("kill9-drop", c, s, e, 0, &ack, "k9")
	killAt := h.cfg.Duration / 2
	killed := make(chan struct{})
	var dead atomic.Bool
	mk := l.Make
	l.Make = func(i int64, req *fasthttp.Request) bool { return !dead.Load() && mk(i, req) }
	go func() {
		time.Sleep(killAt)
		s.Kill()
		dead.Store(true)
		close(killed)
	}()
	res := l.Run()
	<-killed
	h.record(res)
	h.logf("   killed pid %d after %s; %d orders acknowledged", s.Pid(), killAt, ack.N())
	s2, err := h.startTicketd("ticketd-restarted", s.DataDir, nil)
	if err != nil {
		return err
	}
	defer s2.Stop()
	s2.SecretKey, s2.PublishableKey = s.SecretKey, s.PublishableKey
	c2, err := s2.Client(8)
	if err != nil {
		return err
	}
	h.rep.check("kill9", "orders acknowledged before the kill", ack.N() > 0, "%d", ack.N())
	a, err := c2.Availability(s2.SecretKey, e)
	if err != nil {
		return err
	}
	// Orders the service logged but could not acknowledge before dying may
	// exist too: held can exceed the acknowledged count, never fall short.
	h.rep.check("kill9", "no acknowledged hold lost", a.Held >= ack.N() && a.Held <= a.Capacity, "acknowledged %d, held after restart %d", ack.N(), a.Held)
	missing := 0
	for _, n := range ack.All {
		st, _, err := c2.Do("GET", "/v1/events/"+e.EventID+"/orders/"+n, s2.SecretKey, nil)
		if err != nil {
			return err
		}
		if st != 200 {
			missing++
		}
	}
	h.rep.check("kill9", "every acknowledged order survived kill -9", missing == 0, "%d acknowledged, %d missing after restart", ack.N(), missing)
	return nil
}

func (h *Harness) nosync() error {
	s, err := load.StartServer(load.ServerSpec{Bin: h.cfg.SelfBin, Env: []string{load.RoleEnv + "=" + load.RoleNoSync}, DataDir: h.dir("nosync"), LogFile: h.logFile("nosync")})
	if err != nil {
		return err
	}
	defer s.Stop()
	c, err := s.Client(h.cfg.Conns)
	if err != nil {
		return err
	}
	e, err := c.CreateEvent(s.SecretKey, "Flash sale, fsync off", 10_000_000)
	if err != nil {
		return err
	}
	var ack load.Acks
	res := h.record(h.drop("flash-sale-nosync", c, s, e, 0, &ack, "ns").Run())
	h.rep.Durability.NoSyncRPS, h.rep.Durability.NoSyncP99Ms = res.RPS, res.P99
	return h.verifyOrders("nosync", c, s, e, &ack)
}

func (h *Harness) recovery() error {
	plain := h.dir("recovery-log")
	t0 := time.Now()
	sd, err := load.OpenSeeder(plain, 1<<30)
	if err != nil {
		return err
	}
	e, err := sd.Event("Recovery", 10_000_000)
	if err != nil {
		sd.Close()
		return err
	}
	// Learn how many changes a registration makes, then fill up to the
	// target.
	if err := sd.Register(e, "r0-", 10, 1); err != nil {
		sd.Close()
		return err
	}
	base, err := sd.Changes(e)
	if err != nil {
		sd.Close()
		return err
	}
	if err := sd.Register(e, "r1-", 100, 4); err != nil {
		sd.Close()
		return err
	}
	n1, _ := sd.Changes(e)
	per := max(1, (n1-base)/100)
	regs := max(h.cfg.RecoveryRegistrations, 110+max(0, (h.cfg.RecoveryChanges-n1)/per))
	if err := sd.Register(e, "r2-", regs-110, 256); err != nil {
		sd.Close()
		return err
	}
	changes, _ := sd.Changes(e)
	keys := [2]string{sd.SecretKey, sd.PublishableKey}
	sd.Close()
	seedSecs := time.Since(t0).Seconds()
	h.logf("   seeded %d registrations, %d changes in %.1fs", regs, changes, seedSecs)

	snap := h.dir("recovery-snapshot")
	t1 := time.Now()
	if out, err := exec.Command("cp", "-a", plain, snap).CombinedOutput(); err != nil {
		return fmt.Errorf("bench: copy data dir: %v: %s", err, out)
	}
	sd2, err := load.OpenSeeder(snap, 1)
	if err != nil {
		return err
	}
	snapAt, err := sd2.Snapshot(e)
	sd2.Close()
	if err != nil {
		return err
	}
	h.logf("   snapshot saved at seq %d", snapAt)
	snapSecs := time.Since(t1).Seconds()

	for _, x := range []struct {
		dir  string
		snap bool
		secs float64
	}{{plain, false, seedSecs}, {snap, true, seedSecs + snapSecs}} {
		rr, err := h.coldStart(x.dir, keys, e, x.snap)
		if err != nil {
			return err
		}
		rr.Registrations, rr.SeedSeconds = regs, x.secs
		if !x.snap {
			rr.Changes = changes
			rr.ReplayPerSecond = float64(changes) / (rr.ListenToFirstOrder / 1000)
		} else {
			rr.Changes = 1 // the rename after the snapshot at most
		}
		h.logf("   snapshot=%v: listening after %.0f ms, first order after %.0f ms, replay %.0f/s", x.snap, rr.StartToListenMs, rr.StartToFirstOrder, rr.ReplayPerSecond)
		h.rep.Recovery = append(h.rep.Recovery, rr)
	}
	return nil
}

// coldStart starts the service on dir and places orders until one is
// accepted.
func (h *Harness) coldStart(dir string, keys [2]string, e load.EventSetup, snap bool) (RecoveryReport, error) {
	name := "recovery-log"
	if snap {
		name = "recovery-snapshot"
	}
	quiesce()
	s, err := h.startTicketd(name, dir, nil)
	if err != nil {
		return RecoveryReport{}, err
	}
	defer s.Stop()
	c, err := s.Client(4)
	if err != nil {
		return RecoveryReport{}, err
	}
	body := []byte(`{"email":"first-after-start@bench.example","name":"First","items":[{"itemType":"registration_type","itemId":"` + e.TicketTypeID + `","quantity":1}]}`)
	deadline := time.Now().Add(time.Minute)
	for {
		st, b, err := c.Do("POST", "/storefront/v1/events/"+e.EventID+"/orders", keys[1], body)
		if err == nil && (st == 201 || st == 200) {
			break
		}
		if time.Now().After(deadline) {
			return RecoveryReport{}, fmt.Errorf("bench: no order accepted within 1m (see %s): %d %s %v", h.logFile(name), st, load.Truncate(b, 200), err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	done := time.Now()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return RecoveryReport{Snapshot: snap, StartToListenMs: ms(s.Listening.Sub(s.Started)),
		StartToFirstOrder: ms(done.Sub(s.Started)), ListenToFirstOrder: ms(done.Sub(s.Listening))}, nil
}

// settle waits until the service has no snapshot pending, no store flush
// or compaction running, and its WAL syncs have stopped for a quarter
// second (at most a minute): the background work of what ran before is
// done.
func settle(c *load.Client) error {
	m0, ok, err := c.Scrape()
	if err != nil || !ok {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		m, _, err := c.Scrape()
		if err != nil {
			return err
		}
		quiet := m.Sum("ticketd_wal_syncs_total") == m0.Sum("ticketd_wal_syncs_total") && m.Sum("ticketd_snapshots_pending") == 0 &&
			m.Sum("ticketd_store_background_jobs") == 0
		m0 = m
		if quiet {
			return nil
		}
	}
	return nil // still busy after a minute: measure anyway
}

// quiesce settles the machine before a timed start: the seeding and the
// copy leave about a gigabyte of dirty pages that the kernel would write
// back while the service starts (its first fsync queues behind them), and
// the harness's own heap of seeded garbage that the runtime would return
// to the OS meanwhile.
func quiesce() {
	runtime.GC()
	debug.FreeOSMemory()
	syscall.Sync()
}

// liveHeap drives garbage-making requests (scrapes) until the service has
// finished two GC cycles, then reads the live heap the last one marked.
func liveHeap(c *load.Client) (float64, error) {
	m0, ok, err := c.Scrape()
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, errors.New("bench: the service does not serve /metrics")
	}
	c0 := m0.Sum("go_gc_cycles_total_gc_cycles_total")
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		m, _, err := c.Scrape()
		if err != nil {
			return 0, err
		}
		if m.Sum("go_gc_cycles_total_gc_cycles_total") >= c0+2 {
			return m.Sum("go_gc_heap_live_bytes"), nil
		}
	}
	return 0, errors.New("bench: no GC cycle within 30s")
}

func (h *Harness) scale() error {
	// GOGC=10 makes the service collect after little allocation, so the
	// live heap can be read soon after each phase; it does not change what
	// is live.
	env := []string{"GOGC=10"}
	empty, err := h.startTicketd("scale-empty", h.dir("scale-empty"), env)
	if err != nil {
		return err
	}
	ce, err := empty.Client(4)
	if err != nil {
		_ = empty.Stop()
		return err
	}
	heapEmpty, err := liveHeap(ce)
	_ = empty.Stop()
	if err != nil {
		return err
	}

	dir := h.dir("scale")
	t0 := time.Now()
	sd, err := load.OpenSeeder(dir, 0)
	if err != nil {
		return err
	}
	evs := make([]load.EventSetup, h.cfg.ScaleEvents)
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(evs) {
					return
				}
				e, err := sd.Event("Scale "+strconv.Itoa(i), h.cfg.ScaleRegs)
				if err == nil {
					err = sd.Register(e, "s"+strconv.Itoa(i)+"-", h.cfg.ScaleRegs, 16)
				}
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				evs[i] = e
			}
		}()
	}
	wg.Wait()
	sk := sd.SecretKey
	sd.Close()
	if firstErr != nil {
		return firstErr
	}
	seedSecs := time.Since(t0).Seconds()
	h.logf("   seeded %d events x %d registrations in %.1fs", len(evs), h.cfg.ScaleRegs, seedSecs)

	s, err := h.startTicketd("scale", dir, env, "-idle-timeout", h.cfg.ScaleIdle.String())
	if err != nil {
		return err
	}
	defer s.Stop()
	c, err := s.Client(32)
	if err != nil {
		return err
	}
	t1 := time.Now()
	next.Store(0)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= min(len(evs), h.cfg.ScaleActive) {
					return
				}
				if err := c.Retry503("GET", "/v1/events/"+evs[i].EventID, sk); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	act := time.Since(t1)
	m, _, err := c.Scrape()
	if err != nil {
		return err
	}
	active := m.Sum("ticketd_event_actors_active")
	heapActive, err := liveHeap(c)
	if err != nil {
		return err
	}
	if act > h.cfg.ScaleIdle/2 {
		h.rep.Notes = append(h.rep.Notes, fmt.Sprintf("scale: activation took %s, more than half the idle timeout %s: some actors may have passivated before the measure", act.Round(time.Millisecond), h.cfg.ScaleIdle))
	}
	h.logf("   %0.f actors active after %.1fs, live heap %.1f MiB; waiting for passivation", active, act.Seconds(), heapActive/(1<<20))
	deadline := time.Now().Add(h.cfg.ScaleIdle*3 + 30*time.Second)
	for {
		m, _, err := c.Scrape()
		if err != nil {
			return err
		}
		if m.Sum("ticketd_event_actors_active") == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: %.0f actors still active after %s", m.Sum("ticketd_event_actors_active"), h.cfg.ScaleIdle*3)
		}
		time.Sleep(250 * time.Millisecond)
	}
	heapIdle, err := liveHeap(c)
	if err != nil {
		return err
	}
	sr := &ScaleReport{Events: len(evs), RegistrationsPerEvt: h.cfg.ScaleRegs, ActiveAtMeasure: active,
		HeapEmptyBytes: heapEmpty, HeapActiveBytes: heapActive, HeapIdleBytes: heapIdle,
		ActivationSeconds: act.Seconds(), SeedSeconds: seedSecs}
	if active > 0 {
		sr.PerActiveEvent = (heapActive - heapIdle) / active
		sr.PerRegistration = sr.PerActiveEvent / float64(h.cfg.ScaleRegs)
	}
	sr.PerIdleEvent = (heapIdle - heapEmpty) / float64(len(evs))
	h.rep.Scale = sr
	h.rep.check("scale", "every idle actor passivated", true, "active 0 after the idle timeout %s", h.cfg.ScaleIdle)
	return nil
}

// targets compares the run with the benchmark's targets.
func (h *Harness) targets() {
	r := h.rep
	find := func(name string) (load.Result, bool) {
		for _, x := range r.Runs {
			if x.Name == name {
				return x, true
			}
		}
		return load.Result{}, false
	}
	ratio := func(name string, want float64) {
		if x, ok := find(name); ok && x.CeilingRPS > 0 {
			r.target(name+" throughput", fmt.Sprintf(">= %.0f%% of ceiling", want*100),
				fmt.Sprintf("%.0f%% (%.0f of %.0f req/s, the ceiling measured just before)", x.CeilingRatio*100, x.RPS, x.CeilingRPS), x.CeilingRatio >= want)
		}
	}
	ratio("flash-sale", 0.5)
	ratio("sold-out", 0.8)
	ratio("checkin-burst", 0.5)
	if x := r.QueueDrop; x != nil {
		r.target("queue-drop joins (durable)", ">= 50% of ceiling", fmt.Sprintf("%.0f%% (%.0f joins/s)", x.JoinRatio*100, x.JoinRPS), x.JoinRatio >= 0.5)
		r.target("queue-drop status polls", ">= 80% of ceiling", fmt.Sprintf("%.0f%% (%.0f polls/s of waiting entries; sold_out polls %.0f/s, %.0f%%)", x.PollRatio*100, x.PollRPS, x.SoldOutPollRPS, x.SoldOutRatio*100), x.PollRatio >= 0.8)
		r.target("queue-drop sold_out to every waiter", "< 2000 ms after the last sale", fmt.Sprintf("%.0f ms (last waiting answer %.0f ms)", x.LastSaleToSoldOutMs, x.LastWaitingMs),
			x.LastSaleToSoldOutMs < 2000 && x.LastWaitingMs < 2000)
	}
	if d := r.Durability; d != nil && d.MetricsAvailable && d.DuplicateScans > 0 {
		r.target("duplicate scan fsyncs", "0", fmt.Sprintf("%.0f for %d scans", d.DuplicateScanSyncs, d.DuplicateScans), d.DuplicateScanSyncs == 0)
	}
	if x := r.Dashboards; x != nil {
		r.target(fmt.Sprintf("flash sale with %d console dashboards", x.Dashboards), ">= 0.95 x alone",
			fmt.Sprintf("%.3f x (%.0f vs %.0f orders/s, polls every %s; every %s: %.3f x)", x.Ratio, x.PollRPS, x.AloneRPS, DashboardPoll, DashboardFastPoll, x.FastRatio), x.Ratio >= 0.95)
	}
	if x := r.FeedFollow; x != nil {
		r.target(fmt.Sprintf("flash sale with %d feed followers", x.Followers), ">= 0.9 x alone",
			fmt.Sprintf("%.3f x (median of %d rounds: %s)", x.Ratio, x.Rounds, fmtRatios(x.RoundRatios)), x.Ratio >= 0.9)
		r.target("feed follower lag p99", "< 1000 ms", fmt.Sprintf("%.1f ms (p50 %.1f, max %.1f)", x.LagP99Ms, x.LagP50Ms, x.LagMaxMs), x.LagP99Ms < 1000)
		r.target("feed followers exactly once, in order", "every change", fmt.Sprintf("%v, %d changes read %s", x.ExactlyOnce, x.Changes, x.Problem), x.ExactlyOnce)
	}
	if x := r.Integrator; x != nil {
		r.target("integrator p99 during drop at 75% of max", "<= 2x alone", fmt.Sprintf("%.2fx (%.2f vs %.2f ms; drop %.0f/s)", x.Ratio, x.DuringP99Ms, x.AloneP99Ms, x.DropRPS), x.Ratio <= 2)
		r.target("integrator p99 during saturating drop", "<= 2x alone", fmt.Sprintf("%.2fx (%.2f vs %.2f ms; drop %.0f/s)", x.SaturatedRatio, x.SaturatedP99Ms, x.AloneP99Ms, x.SaturatedDropRPS), x.SaturatedRatio <= 2)
	}
	for _, x := range r.Recovery {
		if x.Snapshot {
			r.target("first order with snapshot", "<= 1000 ms from start",
				fmt.Sprintf("%.0f ms (%d registrations)", x.StartToFirstOrder, x.Registrations), x.StartToFirstOrder <= 1000)
		} else {
			r.target("replay rate", ">= 500000 changes/s", fmt.Sprintf("%.0f/s (%d changes)", x.ReplayPerSecond, x.Changes), x.ReplayPerSecond >= 500_000)
		}
	}
	if s := r.Scale; s != nil {
		r.target("heap per registration", "<= 1024 B", fmt.Sprintf("%.0f B", s.PerRegistration), s.PerRegistration <= 1024)
	}
}

// profile runs the flash sale on the composed service with the CPU and
// allocation profiles on, and keeps the top of both (`go tool pprof -top`).
func (h *Harness) profile() error {
	prefix := filepath.Join(h.cfg.WorkDir, "flash-sale")
	s, err := load.StartServer(load.ServerSpec{Bin: h.cfg.SelfBin, Env: []string{load.RoleEnv + "=" + load.RoleService, load.ProfileEnv + "=" + prefix},
		DataDir: h.dir("profile"), LogFile: h.logFile("profile")})
	if err != nil {
		return err
	}
	c, err := s.Client(h.cfg.Conns)
	if err != nil {
		_ = s.Stop()
		return err
	}
	e, err := c.CreateEvent(s.SecretKey, "Flash sale, profiled", 10_000_000)
	if err != nil {
		_ = s.Stop()
		return err
	}
	var ack load.Acks
	res := h.record(h.drop("flash-sale-profiled", c, s, e, 0, &ack, "pf").Run())
	if err := s.Stop(); err != nil {
		return err
	}
	top := func(kind string, extra ...string) string {
		args := append([]string{"tool", "pprof", "-top", "-nodecount=25"}, extra...)
		args = append(args, h.cfg.SelfBin, prefix+"."+kind+".pprof")
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			return fmt.Sprintf("go tool pprof failed: %v\n%s", err, load.Truncate(out, 500))
		}
		return string(out)
	}
	h.rep.Profile = &ProfileReport{RPS: res.RPS, CPUTop: top("cpu", "-cum"), AllocsTop: top("allocs", "-sample_index=alloc_space"),
		Files: prefix + ".{cpu,allocs}.pprof"}
	return nil
}
