package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"ticketd/bench/load"
)

// Report is everything one harness run measured and checked.
type Report struct {
	Date       time.Time `json:"date"`
	Machine    string    `json:"machine"`
	CPU        string    `json:"cpu"`
	NumCPU     int       `json:"numCpu"`
	GoVersion  string    `json:"goVersion"`
	GOMAXPROCS int       `json:"gomaxprocs"`
	Quick      bool      `json:"quick"`
	Config     string    `json:"config"`

	CeilingRPS float64       `json:"ceilingRps"`
	Runs       []load.Result `json:"runs"`
	Checks     []Check       `json:"checks"`
	Targets    []Target      `json:"targets"`

	Durability *DurabilityReport `json:"durability,omitempty"`
	Integrator *IntegratorReport `json:"integrator,omitempty"`
	Dashboards *DashboardReport  `json:"dashboards,omitempty"`
	FeedFollow *FeedFollowReport `json:"feedFollow,omitempty"`
	QueueDrop  *QueueDropReport  `json:"queueDrop,omitempty"`
	Recovery   []RecoveryReport  `json:"recovery,omitempty"`
	Scale      *ScaleReport      `json:"scale,omitempty"`
	Profile    *ProfileReport    `json:"profile,omitempty"`
	Notes      []string          `json:"notes,omitempty"`
}

// ProfileReport summarises the CPU and allocation profiles of a flash sale
// on the composed service (fsync on).
type ProfileReport struct {
	RPS       float64 `json:"rps"`
	CPUTop    string  `json:"cpuTop"`
	AllocsTop string  `json:"allocsTop"`
	Files     string  `json:"files"`
}

// Check is one correctness assertion after a scenario.
type Check struct {
	Scenario string `json:"scenario"`
	Name     string `json:"name"`
	OK       bool   `json:"ok"`
	Detail   string `json:"detail"`
}

// Target is one of the benchmark's targets and whether this run met it.
type Target struct {
	Name string `json:"name"`
	Want string `json:"want"`
	Got  string `json:"got"`
	Met  bool   `json:"met"`
}

// DurabilityReport compares the same drop with fsync on and off.
type DurabilityReport struct {
	Sync        load.Durability `json:"sync"`
	SyncRPS     float64         `json:"syncRps"`
	NoSyncRPS   float64         `json:"noSyncRps"`
	SyncP99Ms   float64         `json:"syncP99Ms"`
	NoSyncP99Ms float64         `json:"noSyncP99Ms"`
	// DuplicateScanSyncs is the fsyncs seen while only duplicate scans ran.
	DuplicateScanSyncs float64 `json:"duplicateScanSyncs"`
	DuplicateScans     int64   `json:"duplicateScans"`
	MetricsAvailable   bool    `json:"metricsAvailable"`
}

// IntegratorReport is the Developer API mix alone and during a drop.
// During is measured with the drop at 75% of its maximum (DropRPS, open
// loop), Saturated with the drop as fast as the service answers (closed
// loop).
type IntegratorReport struct {
	AloneP99Ms       float64 `json:"aloneP99Ms"`
	DuringP99Ms      float64 `json:"duringP99Ms"`
	Ratio            float64 `json:"ratio"`
	DropRPS          float64 `json:"dropRps"`
	SaturatedP99Ms   float64 `json:"saturatedP99Ms"`
	SaturatedRatio   float64 `json:"saturatedRatio"`
	SaturatedDropRPS float64 `json:"saturatedDropRps"`
	// Levels is the integrator's p99 beside drops at fractions of the
	// saturating drop's throughput, with the drop's own p99: where the
	// ratio leaves 2x, and whether the drop itself kept up there.
	Levels []IntegratorLevel `json:"levels,omitempty"`
}

// IntegratorLevel is the integrator mix beside an open-loop drop at Level
// times the saturating drop's throughput.
type IntegratorLevel struct {
	Level     float64 `json:"level"`
	DropRPS   float64 `json:"dropRps"`
	DropP99Ms float64 `json:"dropP99Ms"`
	P99Ms     float64 `json:"p99Ms"`
	Ratio     float64 `json:"ratio"`
}

// RecoveryReport is one cold start on a large event.
type RecoveryReport struct {
	Snapshot           bool    `json:"snapshot"`
	Changes            int     `json:"changes"` // records in the log after the snapshot (all without one)
	Registrations      int     `json:"registrations"`
	StartToListenMs    float64 `json:"startToListenMs"`
	StartToFirstOrder  float64 `json:"startToFirstOrderMs"`
	ListenToFirstOrder float64 `json:"listenToFirstOrderMs"`
	ReplayPerSecond    float64 `json:"replayPerSecond,omitempty"`
	SeedSeconds        float64 `json:"seedSeconds"`
}

// ScaleReport is the memory picture of many events.
type ScaleReport struct {
	Events              int     `json:"events"`
	RegistrationsPerEvt int     `json:"registrationsPerEvent"`
	ActiveAtMeasure     float64 `json:"activeAtMeasure"`
	HeapEmptyBytes      float64 `json:"heapEmptyBytes"`
	HeapActiveBytes     float64 `json:"heapActiveBytes"`
	HeapIdleBytes       float64 `json:"heapIdleBytes"`
	PerRegistration     float64 `json:"bytesPerRegistration"` // (active - idle) / registrations of the active events
	PerActiveEvent      float64 `json:"bytesPerActiveEvent"`  // (active - idle) / active events
	PerIdleEvent        float64 `json:"bytesPerIdleEvent"`
	ActivationSeconds   float64 `json:"activationSeconds"`
	SeedSeconds         float64 `json:"seedSeconds"`
}

func newReport(cfg *Config) *Report {
	host, _ := os.Hostname()
	return &Report{
		Date: time.Now().UTC(), Machine: host, CPU: load.CPUModel(), NumCPU: runtime.NumCPU(),
		GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0), Quick: cfg.Quick,
		Config: fmt.Sprintf("conns=%d duration=%s open=%s levels=%v soldout=%d queue=%d/%d checkins=%d dup=%.2f mix=%.0f/s recovery=%d changes/%d registrations scale=%dx%d active=%d idle=%s",
			cfg.Conns, cfg.Duration, cfg.OpenDuration, cfg.Levels, cfg.SoldOutCapacity, cfg.QueueBuyers, cfg.QueuePlaces, cfg.CheckinPool, cfg.DuplicateShare,
			cfg.MixRate, cfg.RecoveryChanges, cfg.RecoveryRegistrations, cfg.ScaleEvents, cfg.ScaleRegs, cfg.ScaleActive, cfg.ScaleIdle),
	}
}

func (r *Report) check(scenario, name string, ok bool, format string, args ...any) {
	r.Checks = append(r.Checks, Check{Scenario: scenario, Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
}

func (r *Report) target(name, want, got string, met bool) {
	r.Targets = append(r.Targets, Target{Name: name, Want: want, Got: got, Met: met})
}

func (r *Report) add(res load.Result) load.Result {
	if res.CeilingRPS == 0 {
		res.CeilingRPS = r.CeilingRPS
	}
	if res.CeilingRPS > 0 {
		res.CeilingRatio = res.RPS / res.CeilingRPS
	}
	r.Runs = append(r.Runs, res)
	return res
}

// Failed reports whether any correctness check failed.
func (r *Report) Failed() bool {
	for _, c := range r.Checks {
		if !c.OK {
			return true
		}
	}
	return false
}

// Markdown renders the report as the tables the README shows.
func (r *Report) Markdown(chart string) string {
	var b strings.Builder
	mode := "full"
	if r.Quick {
		mode = "quick (smoke numbers, not comparable)"
	}
	fmt.Fprintf(&b, "# ticketd load benchmark, %s\n\n", r.Date.Format(time.RFC3339))
	fmt.Fprintf(&b, "Machine `%s` (%s, %d CPUs), %s, GOMAXPROCS %d, mode %s.  \n", r.Machine, r.CPU, r.NumCPU, r.GoVersion, r.GOMAXPROCS, mode)
	fmt.Fprintf(&b, "Knobs: `%s`.  \nCeiling (bare fasthttp decoding the same JSON): **%.0f req/s**.\n\n", r.Config, r.CeilingRPS)
	b.WriteString("| run | mode | conns | target/s | req/s | x ceiling | p50 ms | p99 ms | p99.9 ms | max ms | statuses | errors | unsent |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|\n")
	for _, x := range r.Runs {
		tgt := "-"
		if x.TargetRPS > 0 {
			tgt = fmt.Sprintf("%.0f", x.TargetRPS)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %.0f | %.2f | %.2f | %.2f | %.2f | %.2f | %s | %d | %d |\n",
			x.Name, x.Mode, x.Conns, tgt, x.RPS, x.CeilingRatio, x.P50, x.P99, x.P999, x.Max, load.Statuses(x.Status), x.Errors, x.Unsent)
	}
	r.cpuSection(&b)
	if len(r.Targets) > 0 {
		b.WriteString("\n## Targets\n\n| target | want | got | met |\n|---|---|---|---|\n")
		for _, t := range r.Targets {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t.Name, t.Want, t.Got, yes(t.Met))
		}
	}
	if d := r.Durability; d != nil && (d.SyncRPS > 0 || d.NoSyncRPS > 0) {
		b.WriteString("\n## Durability cost (flash sale, every request a durable hold)\n\n")
		if d.MetricsAvailable {
			fmt.Fprintf(&b, "- records per fsync %.1f, records per commit %.1f, fsyncs/s %.0f (%.0f commits, %.0f records, %.0f fsyncs)\n",
				d.Sync.RecordsPerSync, d.Sync.RecordsPerCommit, d.Sync.SyncsPerSecond, d.Sync.Commits, d.Sync.Records, d.Sync.Syncs)
			fmt.Fprintf(&b, "- an fsync took %.2f ms on average; the log was in fsync %.0f%% of the time\n", d.Sync.SyncMs, d.Sync.SyncBusy*100)
			fmt.Fprintf(&b, "- duplicate scans: %d, fsyncs meanwhile: %.0f\n", d.DuplicateScans, d.DuplicateScanSyncs)
		} else {
			b.WriteString("- /metrics not served by this build: group-commit numbers unavailable\n")
		}
		fmt.Fprintf(&b, "- fsync on: %.0f req/s, p99 %.2f ms; fsync off (bench-only build): %.0f req/s, p99 %.2f ms\n",
			d.SyncRPS, d.SyncP99Ms, d.NoSyncRPS, d.NoSyncP99Ms)
	}
	if x := r.Dashboards; x != nil {
		fmt.Fprintf(&b, "\n## Console dashboards\n\nThe flash sale with %d console dashboards polling their live fragment every %s: %.3f x its throughput alone (%.0f vs %.0f orders/s); polling every %s: %.3f x (%.0f orders/s); means of %d interleaved rounds, %d polls. A poll alone (closed loop, no drop) cost the service %.0f us of CPU: %d dashboards every %s take %.5f cores.\n",
			x.Dashboards, DashboardPoll, x.Ratio, x.PollRPS, x.AloneRPS, DashboardFastPoll, x.FastRatio, x.FastRPS, x.Rounds, x.Polls, x.PollCPUUs, x.Dashboards, DashboardPoll, x.PollCores)
	}
	if x := r.FeedFollow; x != nil {
		fmt.Fprintf(&b, "\n## Feed followers\n\nThe flash sale with %d integrators long-polling its event's change feed: %.3f x its throughput alone, the median of %d interleaved rounds' ratios (%s; median drops %.0f vs %.0f orders/s). CPU per order, median drops beside the followers vs alone: service %.1f vs %.1f us, load generator %.1f vs %.1f us; %.0f bytes read per change. Lag from a change's occurredAt to its arrival at a follower: p50 %.1f ms, p99 %.1f ms, max %.1f ms; %d changes read in %d requests; every follower saw every change once, in order: %v %s\n",
			x.Followers, x.Ratio, x.Rounds, fmtRatios(x.RoundRatios), x.FollowRPS, x.AloneRPS, x.ServerUsFollow, x.ServerUsAlone, x.GeneratorUsFollow, x.GeneratorUsAlone, x.BytesPerChange,
			x.LagP50Ms, x.LagP99Ms, x.LagMaxMs, x.Changes, x.Reads, x.ExactlyOnce, x.Problem)
	}
	if x := r.QueueDrop; x != nil {
		fmt.Fprintf(&b, "\n## Queue drop\n\n%d buyers joined the waiting room before onSaleAt against %d places: %.0f durable joins/s (%.2f x ceiling). "+
			"Status polls of waiting entries: %.0f/s (%.2f x); of sold-out entries: %.0f/s (%.2f x). onSaleAt to sold out %.1f s (%.1f s of it the position census with admission paused; %.1f s from admission's start); "+
			"the last sale to the first sold_out answer %.0f ms. Queue order against join order: ascending share %.3f, Spearman %.4f (a shuffle: 0.5 and 0). %d admitted, %d sold, %d 5xx.\n",
			x.Buyers, x.Places, x.JoinRPS, x.JoinRatio, x.PollRPS, x.PollRatio, x.SoldOutPollRPS, x.SoldOutRatio, x.OnSaleToSoldOutS, x.CensusS, x.ResumeToSoldOutS,
			x.LastSaleToSoldOutMs, x.AscendingShare, x.Spearman, x.Admitted, x.Sold, x.Status5xx)
	}
	if x := r.Integrator; x != nil {
		fmt.Fprintf(&b, "\n## Integrator mix\n\np99 alone %.2f ms; during a drop at 75%% of its maximum (%.0f/s) %.2f ms, ratio %.2f; during a saturating drop (%.0f/s) %.2f ms, ratio %.2f.\n",
			x.AloneP99Ms, x.DropRPS, x.DuringP99Ms, x.Ratio, x.SaturatedDropRPS, x.SaturatedP99Ms, x.SaturatedRatio)
		if len(x.Levels) > 0 {
			b.WriteString("\nBeside drops at fractions of the saturating drop's throughput:\n\n| drop level | drop req/s | drop p99 ms | integrator p99 ms | x alone |\n|--:|--:|--:|--:|--:|\n")
			for _, l := range x.Levels {
				fmt.Fprintf(&b, "| %.0f%% | %.0f | %.2f | %.2f | %.2f |\n", l.Level*100, l.DropRPS, l.DropP99Ms, l.P99Ms, l.Ratio)
			}
		}
		b.WriteString("\nBy kind of request (p50 / p99 / max ms):\n\n| run | kind | requests | p50 | p99 | max |\n|---|---|--:|--:|--:|--:|\n")
		for _, run := range r.Runs {
			kinds := make([]string, 0, len(run.Kinds))
			for k := range run.Kinds {
				kinds = append(kinds, k)
			}
			sort.Strings(kinds)
			for _, k := range kinds {
				q := run.Kinds[k]
				fmt.Fprintf(&b, "| %s | %s | %d | %.2f | %.2f | %.2f |\n", run.Name, k, q.Requests, q.P50, q.P99, q.Max)
			}
		}
	}
	if len(r.Recovery) > 0 {
		b.WriteString("\n## Recovery\n\n| snapshot | registrations | changes replayed | start→listening ms | start→first order ms | replay/s | seed s |\n|---|--:|--:|--:|--:|--:|--:|\n")
		for _, x := range r.Recovery {
			fmt.Fprintf(&b, "| %s | %d | %d | %.0f | %.0f | %.0f | %.1f |\n", yes(x.Snapshot), x.Registrations, x.Changes,
				x.StartToListenMs, x.StartToFirstOrder, x.ReplayPerSecond, x.SeedSeconds)
		}
	}
	if s := r.Scale; s != nil {
		fmt.Fprintf(&b, "\n## Scale\n\n%d events x %d registrations: live heap empty %.1f MiB, all active %.1f MiB (%.0f actors active), idle %.1f MiB; "+
			"**%.0f B per registration** (%.0f B per active event, mailbox included), **%.0f B per idle event**; activation %.1f s.\n",
			s.Events, s.RegistrationsPerEvt, s.HeapEmptyBytes/(1<<20), s.HeapActiveBytes/(1<<20), s.ActiveAtMeasure,
			s.HeapIdleBytes/(1<<20), s.PerRegistration, s.PerActiveEvent, s.PerIdleEvent, s.ActivationSeconds)
	}
	if p := r.Profile; p != nil {
		fmt.Fprintf(&b, "\n## Profile of a flash sale (%.0f req/s, profiled service)\n\nCPU, top functions (cumulative):\n\n```\n%s```\n\nAllocated space:\n\n```\n%s```\n",
			p.RPS, p.CPUTop, p.AllocsTop)
	}
	b.WriteString("\n## Correctness\n\n| scenario | check | ok | detail |\n|---|---|---|---|\n")
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", c.Scenario, c.Name, yes(c.OK), c.Detail)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\n> %s\n", n)
	}
	if chart != "" {
		fmt.Fprintf(&b, "\n![latency vs throughput](%s)\n", chart)
	}
	return b.String()
}

// cpuSection writes the CPU per request of the closed-loop runs that have
// it: a throughput ratio to the ceiling is (generator + bare server) /
// (generator + service) per request when both cores are busy, so these
// figures say which side moved when a ratio did.
func (r *Report) cpuSection(b *strings.Builder) {
	head := false
	for _, x := range r.Runs {
		if x.Mode != "closed" || x.ServerCPUUsPerRequest == 0 {
			continue
		}
		if !head {
			b.WriteString("\n## CPU per request (closed loops)\n\nServer and load generator CPU time over each run, from `/proc/<pid>/stat` and `getrusage`.\n\n")
			b.WriteString("| run | req/s | server us/req | generator us/req | server cores | generator cores |\n|---|--:|--:|--:|--:|--:|\n")
			head = true
		}
		fmt.Fprintf(b, "| %s | %.0f | %.1f | %.1f | %.2f | %.2f |\n", x.Name, x.RPS, x.ServerCPUUsPerRequest, x.ClientCPUUsPerRequest, x.ServerCores, x.ClientCores)
	}
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "**NO**"
}

// Write stores the report as <stamp>.json, <stamp>.md and <stamp>.png in
// dir, and copies the Markdown and chart to latest.md and latest.png.
func (r *Report) Write(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("bench: results dir: %w", err)
	}
	stamp := r.Date.Format("20060102-150405")
	if r.Quick {
		stamp += "-quick"
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("bench: encode report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, stamp+".json"), js, 0o644); err != nil {
		return "", fmt.Errorf("bench: write report: %w", err)
	}
	png, err := r.Chart()
	if err != nil {
		return "", err
	}
	chart := ""
	if png != nil {
		chart = stamp + ".png"
		if err := os.WriteFile(filepath.Join(dir, chart), png, 0o644); err != nil {
			return "", fmt.Errorf("bench: write chart: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "latest.png"), png, 0o644); err != nil {
			return "", fmt.Errorf("bench: write chart: %w", err)
		}
	}
	md := r.Markdown(chart)
	if err := os.WriteFile(filepath.Join(dir, stamp+".md"), []byte(md), 0o644); err != nil {
		return "", fmt.Errorf("bench: write report: %w", err)
	}
	latest := strings.Replace(md, "]("+chart+")", "](latest.png)", 1)
	if err := os.WriteFile(filepath.Join(dir, "latest.md"), []byte(latest), 0o644); err != nil {
		return "", fmt.Errorf("bench: write report: %w", err)
	}
	return filepath.Join(dir, stamp+".md"), nil
}
