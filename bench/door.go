package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"

	"ticketd/bench/load"
)

// door-sync (decisions §18, issue 33): an event of DoorRegs confirmed
// registrations and two doors (the event's and a venue's); DoorDevices
// devices download the passes (gzip), then upload DoorScans offline scans
// in batches of 500, DuplicateShare of them repeats of a pass and door
// another device scanned in an earlier batch; each device sends its batches
// one after another, the devices at once. It reports the scans per
// second against the single-scan check-in of the same run, the p99 of a
// batch, the first download's time and bytes, a caught-up delta request's
// rate against the ceiling, and how fast a check-in on one device reaches
// another's stream; it checks that every admitted scan is one check-in and
// that every repeat (whichever of a pass-door's scans came second) was
// answered already_checked_in.

const doorBatch = 500

type doorDevice struct {
	id, key string
}

type doorScan struct {
	reg, door string // door: "" (event) or the venue id
	dup       bool
}

func (h *Harness) doorSync(s *load.Server, c *load.Client) error {
	cfg := h.cfg
	e, err := c.CreateEvent(s.SecretKey, "Door sync", 10_000_000)
	if err != nil {
		return err
	}
	var venue load.IDOnly
	if err := c.JSON("POST", "/admin/v1/events/"+e.EventID+"/venues", s.AdminToken, map[string]any{"name": "Hall"}, 201, &venue); err != nil {
		return err
	}
	t0 := time.Now()
	ids, err := c.Register(s.SecretKey, e, "dsync", cfg.DoorRegs, 64)
	if err != nil {
		return err
	}
	extra, err := c.Register(s.SecretKey, e, "dsync-live", 200, 16) // for the stream's latency
	if err != nil {
		return err
	}
	h.logf("   %d registrations set up in %.1fs", len(ids)+len(extra), time.Since(t0).Seconds())
	devs := make([]doorDevice, cfg.DoorDevices)
	for i := range devs {
		var d struct {
			ID        string `json:"id"`
			SetupCode string `json:"setupCode"`
		}
		if err := c.JSON("POST", "/v1/events/"+e.EventID+"/devices", s.SecretKey, map[string]any{"name": "gate " + strconv.Itoa(i)}, 201, &d); err != nil {
			return err
		}
		var k struct {
			Key string `json:"key"`
		}
		if err := c.JSON("POST", "/door/v1/device/initialize", "", map[string]any{"setupCode": d.SetupCode}, 201, &k); err != nil {
			return err
		}
		devs[i] = doorDevice{id: d.ID, key: k.Key}
	}
	if err := settle(c); err != nil {
		return err
	}

	// The first download: one device alone (its time and bytes), then the
	// others at once.
	t1 := time.Now()
	n, gz, raw, cursor, err := downloadPasses(c, devs[0].key, "")
	if err != nil {
		return err
	}
	first := time.Since(t1)
	h.logf("   first download: %d passes in %.2fs, %.1f MB gzip (%.1f MB raw)", n, first.Seconds(), float64(gz)/1e6, float64(raw)/1e6)
	h.rep.check("door-sync", "the first download holds every pass", n == len(ids)+len(extra), "%d passes, %d registrations", n, len(ids)+len(extra))
	h.rep.target("door-sync first download of the passes", "< 3 s", fmt.Sprintf("%.2f s (%d passes, %.1f MB gzip, %.1f MB raw)", first.Seconds(), n, float64(gz)/1e6, float64(raw)/1e6),
		first < 3*time.Second)
	t2 := time.Now()
	var wg sync.WaitGroup
	var dlErr atomic.Value
	for _, d := range devs[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, _, _, err := downloadPasses(c, d.key, ""); err != nil {
				dlErr.Store(err)
			}
		}()
	}
	wg.Wait()
	if err, ok := dlErr.Load().(error); ok {
		return err
	}
	h.logf("   %d more devices downloaded in %.2fs", len(devs)-1, time.Since(t2).Seconds())

	// The scans: rounds of one batch per device; a repeat names a pass and
	// door scanned in an earlier round by another device.
	pairs := make([]doorScan, 0, 2*len(ids))
	for _, id := range ids {
		pairs = append(pairs, doorScan{reg: id}, doorScan{reg: id, door: venue.ID})
	}
	rounds := (cfg.DoorScans + doorBatch*len(devs) - 1) / (doorBatch * len(devs))
	dups := int(float64(cfg.DoorScans) * cfg.DuplicateShare)
	perRound0 := doorBatch * len(devs)
	dupShare := 0.0
	if rest := cfg.DoorScans - perRound0; rest > 0 {
		dupShare = float64(dups) / float64(rest)
	}
	type owned struct {
		doorScan
		dev int
	}
	var sent []owned // what earlier rounds sent, for repeats
	next, total, nDup := 0, 0, 0
	batches := make([][][]doorScan, rounds) // round -> device -> scans
	for r := range rounds {
		batches[r] = make([][]doorScan, len(devs))
		var roundSent []owned
		for d := range devs {
			for len(batches[r][d]) < doorBatch && total < cfg.DoorScans {
				k := uint64(total)*0x9E3779B97F4A7C15 + 1
				u := float64(k>>11) / float64(1<<53)
				var sc doorScan
				repeat := false
				if r > 0 && u < dupShare && nDup < dups && len(sent) > 0 {
					j := int((k * 0xBF58476D1CE4E5B9) >> 33)
					o := sent[j%len(sent)]
					if o.dev == d {
						o = sent[(j+1)%len(sent)]
					}
					if o.dev != d { // with one device no repeat can come from another
						sc, repeat = o.doorScan, true
						sc.dup = true
						nDup++
					}
				}
				if !repeat {
					if next >= len(pairs) {
						return fmt.Errorf("bench: door-sync: %d scans need more registrations than %d", cfg.DoorScans, len(ids))
					}
					sc = pairs[next]
					next++
					roundSent = append(roundSent, owned{sc, d})
				}
				batches[r][d] = append(batches[r][d], sc)
				total++
			}
		}
		sent = append(sent, roundSent...)
	}
	var verdicts sync.Map // reg|door -> *[3]int32 (admitted, already, refused)
	count := func(sc doorScan, v string) {
		p, _ := verdicts.LoadOrStore(sc.reg+"|"+sc.door, new([3]atomic.Int32))
		arr := p.(*[3]atomic.Int32)
		switch v {
		case "admitted":
			arr[0].Add(1)
		case "already_checked_in":
			arr[1].Add(1)
		default:
			arr[2].Add(1)
		}
	}
	// Over the timed scans: answers already_checked_in, refused, and
	// repeats admitted because they overtook the first scan of their pass
	// and door (sent by another device that had not been answered yet).
	var already, refused, overtook int
	lat := make([]time.Duration, 0, rounds*len(devs))
	var latMu sync.Mutex
	scanned := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	// The bodies are encoded before the clock starts: the load
	// generator shares the service's two cores, and its own JSON is not
	// the service's cost.
	bodies := make([][][]byte, rounds)
	for r := range rounds {
		bodies[r] = make([][]byte, len(devs))
		for d, b := range batches[r] {
			var sb strings.Builder
			sb.WriteString(`{"scans":[`)
			for i, sc := range b {
				if i > 0 {
					sb.WriteByte(',')
				}
				door := `"subjectType":"event"`
				if sc.door != "" {
					door = `"subjectType":"venue","subjectId":"` + sc.door + `"`
				}
				fmt.Fprintf(&sb, `{"scanId":"r%d-%d","registrationId":"%s",%s,"scannedAt":"%s","offline":true}`, r, i, sc.reg, door, scanned)
			}
			sb.WriteString(`]}`)
			bodies[r][d] = []byte(sb.String())
		}
	}
	// The answers are kept and checked after the clock stops, as the
	// bodies are encoded before it starts: decoding 500 verdicts (about
	// 175 kB) per batch is the load generator's own JSON on the service's
	// two cores, not the service's cost; checkin-burst, the reference,
	// reads only its status codes in its timed loop.
	// Each device its own keep-alive connection, the requests' bytes built
	// and the answers' buffers faulted in before the clock starts: the
	// load generator shares the two cores, and its page faults and copies
	// cost as much as the service's work a scan through fasthttp's client
	// (bench/load.RawConn).
	answers := make([][][]byte, rounds)
	reqs := make([][][]byte, rounds)
	for r := range rounds {
		answers[r] = make([][]byte, len(devs))
		reqs[r] = make([][]byte, len(devs))
		for d := range devs {
			if len(batches[r][d]) == 0 {
				continue
			}
			reqs[r][d] = load.BuildRequest("POST", s.URL, "/door/v1/scans", devs[d].key, bodies[r][d])
			buf := make([]byte, 512*len(batches[r][d]))
			for i := 0; i < len(buf); i += 4096 {
				buf[i] = 1
			}
			answers[r][d] = buf
		}
	}
	bodies = nil
	conns := make([]*load.RawConn, len(devs))
	for d := range devs {
		rc, err := load.DialRaw(s.URL)
		if err != nil {
			return err
		}
		defer rc.Close()
		conns[d] = rc
	}
	// The store's background work over the timed scans (flushes and
	// compactions are a share of the service's CPU there); an older
	// service without these metrics reads as zero.
	m0, _, _ := c.Scrape()
	if m0 != nil {
		// Whether a collection is due in the window: the heap in use
		// against the goal the last cycle set.
		h.logf("   before the timed scans: heap %.0f MB in use, live heap %.0f MB at the last cycle, next cycle at %.0f MB",
			m0.Sum("go_memstats_heap_alloc_bytes")/1e6, m0.Sum("go_gc_heap_live_bytes")/1e6, m0.Sum("go_gc_heap_goal_bytes")/1e6)
	}
	cpu0 := load.SampleCPU(s.Pid())
	flt0, _ := load.ProcMinorFaults(s.Pid())
	t3 := time.Now()
	// Each device uploads its batches one after another, as a phone that
	// comes back online drains its queue; the devices do not wait for each
	// other. (Until 2026-11-30 every round waited for the slowest of the
	// fifty batches before the next began: the run measured that barrier,
	// the service idle between rounds, more than the service's rate.)
	var scanErr atomic.Value
	for d := range devs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				if len(batches[r][d]) == 0 {
					continue
				}
				start := time.Now()
				st, resp, err := conns[d].Do(reqs[r][d], answers[r][d][:0], time.Minute)
				took := time.Since(start)
				if err != nil || st != 200 {
					scanErr.Store(fmt.Errorf("bench: door-sync: scans: %d %v %s", st, err, load.Truncate(resp, 200)))
					return
				}
				latMu.Lock()
				lat = append(lat, took)
				latMu.Unlock()
				answers[r][d] = resp
			}
		}()
	}
	wg.Wait()
	if err, ok := scanErr.Load().(error); ok {
		return err
	}
	elapsed := time.Since(t3)
	scansPerSec := float64(total) / elapsed.Seconds()
	slices.Sort(lat)
	p99 := lat[min(len(lat)-1, len(lat)*99/100)]
	h.logf("   %d scans (%d repeats) in %d batches: %.0f scans/s, batch p50 %.1f ms p99 %.1f ms", total, nDup, len(lat), scansPerSec,
		ms(lat[len(lat)/2]), ms(p99))
	dres := load.Result{Name: "door-sync", Mode: "closed", Conns: len(devs), RPS: scansPerSec, Requests: int64(total), Seconds: elapsed.Seconds(),
		P50: ms(lat[len(lat)/2]), P99: ms(p99)}
	dres.SetCPU(cpu0, load.SampleCPU(s.Pid())) // per scan, not per batch
	if flt1, err := load.ProcMinorFaults(s.Pid()); err == nil && flt0 > 0 {
		// Pages the service touched for the first time (or again, after
		// the runtime returned them): each a trap into the kernel, dear on
		// a virtual machine.
		h.logf("   the service took %d minor page faults over the timed scans (%.0f MB of pages)", flt1-flt0, float64(flt1-flt0)*4096/1e6)
	}
	if m1, ok, _ := c.Scrape(); ok && m0 != nil {
		d := func(name string) float64 { return (m1.Sum(name) - m0.Sum(name)) / 1e6 }
		h.logf("   the store over the timed scans: %.1f MB committed, %.1f MB flushed, %.1f MB written by %.0f compactions (%.1f MB read); %.0f GC cycles, %.0f MB allocated (live heap %.0f MB, next cycle at %.0f MB)",
			d("ticketd_wal_bytes_total"), d("ticketd_store_flushed_bytes_total"), d("ticketd_store_compacted_bytes_total"),
			d("ticketd_store_compactions_total")*1e6, d("ticketd_store_compaction_read_bytes_total"),
			d("go_gc_duration_seconds_count")*1e6, d("go_memstats_alloc_bytes_total"),
			m1.Sum("go_gc_heap_live_bytes")/1e6, m1.Sum("go_gc_heap_goal_bytes")/1e6)
	}
	dres = h.record(dres)
	for r := range rounds {
		for d, b := range batches[r] {
			if len(b) == 0 {
				continue
			}
			var res struct {
				Results []struct {
					Verdict string `json:"verdict"`
				} `json:"results"`
			}
			if err := gojson.Unmarshal(answers[r][d], &res); err != nil || len(res.Results) != len(b) {
				return fmt.Errorf("bench: door-sync: %d results for %d scans: %v", len(res.Results), len(b), err)
			}
			for i, sc := range b {
				v := res.Results[i].Verdict
				count(sc, v)
				switch {
				case v == "already_checked_in":
					already++
				case v != "admitted":
					refused++
				case sc.dup:
					overtook++
				}
			}
		}
	}
	answers = nil

	// The single scan of the same run: checkin-burst's closed loop, or a
	// short one of this scenario's own when it did not run.
	single, singleCPU := 0.0, 0.0
	for _, r := range h.rep.Runs {
		if r.Name == "checkin-burst" {
			single, singleCPU = r.RPS, r.ServerCPUUsPerRequest
		}
	}
	if single == 0 {
		pool := &scanPool{ids: extra[100:]}
		var created, repeated atomic.Int64
		ld := h.scans("door-sync-single-scan", c, s, e, pool, 0, 16, &created, &repeated)
		ld.Duration = min(cfg.Duration, 3*time.Second)
		sr := h.record(ld.Run())
		single, singleCPU = sr.RPS, sr.ServerCPUUsPerRequest
	}
	if singleCPU > 0 && dres.ServerCPUUsPerRequest > 0 {
		// On a shared machine the wall-clock rates follow the neighbours;
		// the service's own CPU per scan does much less.
		h.rep.Notes = append(h.rep.Notes, fmt.Sprintf("door-sync: the service spent %.1f µs of CPU per batched scan against %.1f µs per single-scan check-in (%.1fx less)",
			dres.ServerCPUUsPerRequest, singleCPU, singleCPU/dres.ServerCPUUsPerRequest))
	}
	h.rep.target("door-sync scans/s vs single-scan check-ins", "≥ 10x", fmt.Sprintf("%.1fx (%.0f vs %.0f scans/s)", scansPerSec/single, scansPerSec, single), scansPerSec >= 10*single)
	h.rep.Notes = append(h.rep.Notes, fmt.Sprintf("door-sync: with %d devices sending at once, a batch waits for the others in the event's queue: p50 %.0f ms, p99 %.0f ms (the p99 target is taken on batches sent one at a time, below)",
		len(devs), ms(lat[len(lat)/2]), ms(p99)))

	// A batch's own time: batches of the pass-doors left, one at a time.
	var solo []time.Duration
	for b := 0; b < 40 && next+doorBatch <= len(pairs); b++ {
		body := make([]map[string]any, doorBatch)
		batch := pairs[next : next+doorBatch]
		for i := range body {
			sc := pairs[next]
			next++
			m := map[string]any{"scanId": fmt.Sprintf("solo%d-%d", b, i), "registrationId": sc.reg, "subjectType": "event", "scannedAt": scanned, "offline": true}
			if sc.door != "" {
				m["subjectType"], m["subjectId"] = "venue", sc.door
			}
			body[i] = m
		}
		enc, _ := json.Marshal(map[string]any{"scans": body})
		start := time.Now()
		st, resp, err := c.Do("POST", "/door/v1/scans", devs[b%len(devs)].key, enc)
		if err != nil || st != 200 {
			return fmt.Errorf("bench: door-sync: solo batch: %d %v %s", st, err, load.Truncate(resp, 200))
		}
		solo = append(solo, time.Since(start))
		var res struct {
			Results []struct {
				Verdict string `json:"verdict"`
			} `json:"results"`
		}
		if err := json.Unmarshal(resp, &res); err != nil || len(res.Results) != len(batch) {
			return fmt.Errorf("bench: door-sync: solo batch answered %d results: %v", len(res.Results), err)
		}
		for i, sc := range batch {
			count(sc, res.Results[i].Verdict)
		}
	}
	if len(solo) > 0 {
		slices.Sort(solo)
		sp := solo[min(len(solo)-1, len(solo)*99/100)]
		h.logf("   %d batches of 500 one at a time: p50 %.1f ms, p99 %.1f ms", len(solo), ms(solo[len(solo)/2]), ms(sp))
		h.rep.target("door-sync p99 of a 500-scan batch (one at a time)", "< 100 ms", fmt.Sprintf("%.1f ms over %d batches", ms(sp), len(solo)), sp < 100*time.Millisecond)
	}

	// Every admitted scan is one check-in; every repeat answered already in.
	admitted, twice := 0, 0
	verdicts.Range(func(_, v any) bool {
		arr := v.(*[3]atomic.Int32)
		a := int(arr[0].Load())
		admitted += a
		if a != 1 {
			twice++
		}
		return true
	})
	// Counted on the scanned passes only: the single-scan run of this
	// scenario's own (without checkin-burst) checks in some of the others.
	scannedRegs := make(map[string]bool, len(ids))
	for _, id := range ids {
		scannedRegs[id] = true
	}
	checkins := 0
	if _, _, _, _, err := downloadPassesEach(c, devs[0].key, "", func(p doorPassLite) {
		if scannedRegs[p.RegistrationID] {
			checkins += len(p.Checkins)
		}
	}); err != nil {
		return err
	}
	h.rep.check("door-sync", "every admitted scan is one check-in", admitted == checkins && twice == 0,
		"%d admitted, %d check-ins on the passes, %d pass-doors not admitted exactly once", admitted, checkins, twice)
	// The devices race: a repeat may reach the event before the scan it
	// repeats, and then that one is the repeat. Either way each pass and
	// door is admitted once (above) and every other scan of it answered
	// already_checked_in.
	h.rep.check("door-sync", "every repeat answered already_checked_in", already == nDup && refused == 0,
		"%d repeats: %d answered already_checked_in, %d refused (%d repeats arrived before the scan they repeat)", nDup, already, refused, overtook)

	// A caught-up delta request against the ceiling.
	if _, _, _, cursor, err = downloadPasses(c, devs[0].key, cursor); err != nil {
		return err
	}
	var i0 atomic.Int64
	ld := &load.Load{Name: "door-sync-delta", Client: c, Conns: cfg.Conns, Duration: min(cfg.Duration, 5*time.Second), ServerPID: s.Pid(),
		Make: func(i int64, req *fasthttp.Request) bool {
			d := devs[int(i0.Add(1))%len(devs)]
			load.SetRequest(req, "GET", s.URL+"/door/v1/passes?cursor="+url.QueryEscape(cursor), d.key)
			return true
		}}
	h.reference("door-sync")
	delta := h.record(ld.Run())
	if h.ref > 0 {
		h.rep.target("door-sync caught-up delta request vs ceiling", "≥ 0.8x", fmt.Sprintf("%.2fx (%.0f vs %.0f req/s)", delta.RPS/h.ref, delta.RPS, h.ref), delta.RPS >= 0.8*h.ref)
	}

	// A check-in on one device reaches another's stream.
	stream, err := streamLatency(c, s.URL, devs[0], devs[1], extra[:100])
	if err != nil {
		return err
	}
	h.logf("   stream: p50 %.1f ms, p99 %.1f ms over %d check-ins", ms(stream[len(stream)/2]), ms(stream[len(stream)*99/100]), len(stream))
	sp99 := stream[min(len(stream)-1, len(stream)*99/100)]
	h.rep.target("door-sync a check-in reaches another device's stream (p99)", "< 1 s", fmt.Sprintf("%.1f ms", ms(sp99)), sp99 < time.Second)
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

type doorPassLite struct {
	RegistrationID string            `json:"registrationId"`
	Checkins       []json.RawMessage `json:"checkins"`
}

// downloadPasses pages through the passes after cursor with gzip; it
// answers how many, the bytes on the wire and decoded, and the cursor after.
func downloadPasses(c *load.Client, key, cursor string) (n, gz, raw int, next string, err error) {
	return downloadPassesEach(c, key, cursor, nil)
}

func downloadPassesEach(c *load.Client, key, cursor string, each func(doorPassLite)) (n, gz, raw int, next string, err error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	for {
		req.Reset()
		u := c.Base + "/door/v1/passes"
		if cursor != "" {
			u += "?cursor=" + url.QueryEscape(cursor)
		}
		load.SetRequest(req, "GET", u, key)
		req.Header.Set("Accept-Encoding", "gzip")
		if err := c.HC.DoTimeout(req, resp, time.Minute); err != nil {
			return n, gz, raw, "", err
		}
		if resp.StatusCode() != 200 {
			return n, gz, raw, "", fmt.Errorf("bench: passes: status %d: %s", resp.StatusCode(), load.Truncate(resp.Body(), 200))
		}
		gz += len(resp.Body())
		body := resp.Body()
		if strings.Contains(string(resp.Header.Peek("Content-Encoding")), "gzip") {
			if body, err = resp.BodyGunzip(); err != nil {
				return n, gz, raw, "", err
			}
		}
		raw += len(body)
		var page struct {
			Data       []doorPassLite `json:"data"`
			HasMore    bool           `json:"hasMore"`
			NextCursor string         `json:"nextCursor"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return n, gz, raw, "", err
		}
		n += len(page.Data)
		if each != nil {
			for _, p := range page.Data {
				each(p)
			}
		}
		cursor = page.NextCursor
		if !page.HasMore {
			return n, gz, raw, cursor, nil
		}
	}
}

// streamLatency opens b's stream and checks regs in one by one on a,
// answering, for each, the time from the scan's request to its pass on
// b's stream.
func streamLatency(c *load.Client, base string, a, b doorDevice, regs []string) ([]time.Duration, error) {
	req, _ := nethttp.NewRequest("GET", base+"/door/v1/stream", nil)
	req.Header.Set("Authorization", "Bearer "+b.key)
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("bench: stream: status %d", resp.StatusCode)
	}
	seen := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "data: ") {
				continue
			}
			var p doorPassLite
			if json.Unmarshal([]byte(line[6:]), &p) == nil && len(p.Checkins) > 0 {
				seen <- p.RegistrationID
			}
		}
		close(seen)
	}()
	out := make([]time.Duration, 0, len(regs))
	for i, id := range regs {
		start := time.Now()
		body := map[string]any{"scans": []map[string]any{{"scanId": "live-" + strconv.Itoa(i), "registrationId": id, "subjectType": "event",
			"scannedAt": time.Now().UTC().Format(time.RFC3339)}}}
		if err := c.JSON("POST", "/door/v1/scans", a.key, body, 200, nil); err != nil {
			return nil, err
		}
		deadline := time.After(5 * time.Second)
	wait:
		for {
			select {
			case got, ok := <-seen:
				if !ok {
					return nil, fmt.Errorf("bench: stream ended")
				}
				if got == id {
					break wait
				}
			case <-deadline:
				return nil, fmt.Errorf("bench: check-in of %s not on the stream within 5 s", id)
			}
		}
		out = append(out, time.Since(start))
		time.Sleep(10 * time.Millisecond)
	}
	slices.Sort(out)
	return out, nil
}
