// Command loadgen runs ticketd's load benchmarks: it builds
// ticketd, starts it on fresh data dirs and writes bench/results. See
// package bench for the scenarios; `loadgen -h` lists the knobs.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"ticketd/bench"
	"ticketd/bench/load"
)

func main() {
	// The harness re-executes this binary as its child servers.
	if role := os.Getenv(load.RoleEnv); role != "" {
		if err := load.RunRole(role, os.Args[1:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func run() error {
	quick := flag.Bool("quick", false, "smoke mode: small sizes, short runs (every scenario: about 3 minutes)")
	bin := flag.String("ticketd", "", "ticketd binary (default: go build ./cmd/ticketd into the work dir)")
	results := flag.String("results", "bench/results", "directory of the Markdown, JSON and PNG output; empty writes none")
	only := flag.String("only", "", "comma-separated scenarios to run ("+strings.Join(bench.Scenarios, ",")+"); default all")
	keep := flag.Bool("keep", false, "keep the work dir (data dirs and service logs)")
	conns := flag.Int("conns", 0, "closed-loop connections (0: preset)")
	dur := flag.Duration("duration", 0, "each closed-loop run (0: preset)")
	open := flag.Duration("open-duration", 0, "each open-loop run (0: preset)")
	recovery := flag.Int("recovery-changes", 0, "changes in the recovered event's log, at least (0: preset)")
	recoveryRegs := flag.Int("recovery-registrations", 0, "registrations of the recovered event, at least (0: preset)")
	scaleEvents := flag.Int("scale-events", 0, "events of the scale scenario (0: preset)")
	scaleRegs := flag.Int("scale-registrations", 0, "registrations per event in the scale scenario (0: preset)")
	pool := flag.Int("checkin-pool", 0, "registrations set up before the check-in burst (0: preset)")
	doorRegs := flag.Int("door-registrations", 0, "confirmed registrations of the door-sync event (0: preset)")
	doorScans := flag.Int("door-scans", 0, "offline scans door-sync uploads in batches of 500 (0: preset)")
	queueBuyers := flag.Int("queue-buyers", 0, "buyers joining the queue-drop's waiting room (0: preset)")
	queuePlaces := flag.Int("queue-places", 0, "places of the queue drop (0: preset)")
	flag.Parse()

	cfg := bench.FullConfig()
	if *quick {
		cfg = bench.QuickConfig()
	}
	set := func(dst *int, v int) {
		if v > 0 {
			*dst = v
		}
	}
	set(&cfg.Conns, *conns)
	set(&cfg.RecoveryChanges, *recovery)
	set(&cfg.RecoveryRegistrations, *recoveryRegs)
	set(&cfg.ScaleEvents, *scaleEvents)
	set(&cfg.ScaleRegs, *scaleRegs)
	set(&cfg.CheckinPool, *pool)
	set(&cfg.DoorRegs, *doorRegs)
	set(&cfg.DoorScans, *doorScans)
	set(&cfg.QueueBuyers, *queueBuyers)
	set(&cfg.QueuePlaces, *queuePlaces)
	if *dur > 0 {
		cfg.Duration = *dur
	}
	if *open > 0 {
		cfg.OpenDuration = *open
	}
	if *only != "" {
		cfg.Only = map[string]bool{}
		for _, s := range strings.Split(*only, ",") {
			cfg.Only[strings.TrimSpace(s)] = true
		}
	}
	work, err := os.MkdirTemp("", "ticketd-bench-")
	if err != nil {
		return err
	}
	if *keep {
		fmt.Fprintln(os.Stderr, "work dir:", work)
	} else {
		defer os.RemoveAll(work)
	}
	cfg.WorkDir, cfg.Log = work, os.Stderr
	if cfg.SelfBin, err = os.Executable(); err != nil {
		return err
	}
	cfg.TicketdBin = *bin
	if prefix := os.Getenv(load.ProfileEnv); prefix != "" {
		// Profiled: the service runs as this binary's service role (the
		// same app.Main, which writes <prefix>.cpu.pprof), and the
		// generator profiles itself (<prefix>.loadgen.cpu.pprof): both
		// share the cores, and a ratio is both sides' cost.
		cfg.TicketdBin, cfg.TicketdRole = cfg.SelfBin, load.RoleService
		stop, err := load.StartProfile(prefix + ".loadgen")
		if err != nil {
			return err
		}
		defer stop()
	}
	if cfg.TicketdBin == "" {
		cfg.TicketdBin = filepath.Join(work, "ticketd")
		t := time.Now()
		build := exec.Command("go", "build", "-o", cfg.TicketdBin, "./cmd/ticketd")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build ticketd: %w", err)
		}
		fmt.Fprintf(os.Stderr, "built ticketd in %.1fs\n", time.Since(t).Seconds())
	}
	rep, err := bench.Run(cfg)
	if err != nil {
		return err
	}
	md := rep.Markdown("")
	if *results != "" {
		path, err := rep.Write(*results)
		if err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "wrote", path)
	}
	fmt.Println(md)
	if rep.Failed() {
		return fmt.Errorf("correctness checks failed")
	}
	return nil
}
