// Command chaos runs ticketd's chaos run: for each fault in turn (kill -9,
// a full disk, an injected fsync error, an idle-connection flood, a
// refusing SMTP relay) it starts the real binary supervised on a fresh data
// dir, floods it with orders, injects the fault, and reports what was lost,
// oversold, how long writes took to return and what a read-only client saw.
// See package bench (chaos.go); `chaos -h` lists the knobs.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"ticketd/bench/chaos"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
}

func run() error {
	quick := flag.Bool("quick", false, "short run: about 1.3 minutes")
	bin := flag.String("ticketd", "", "ticketd binary (default: go build ./cmd/ticketd into the work dir)")
	results := flag.String("results", "bench/results", "directory of the Markdown and JSON output; empty writes none")
	only := flag.String("only", "", "comma-separated faults ("+strings.Join(chaos.Faults, ",")+"); default all")
	keep := flag.Bool("keep", false, "keep the work dir (data dirs, service and strace logs)")
	conns := flag.Int("conns", 0, "flood connections (0: preset)")
	flood := flag.Duration("flood", 0, "each flood's length (0: preset)")
	flag.Parse()

	cfg := chaos.FullConfig()
	if *quick {
		cfg = chaos.QuickConfig()
	}
	if *conns > 0 {
		cfg.Conns = *conns
	}
	if *flood > 0 {
		cfg.Flood = *flood
		cfg.FaultAt = min(cfg.FaultAt, *flood/3)
	}
	if *only != "" {
		for _, s := range strings.Split(*only, ",") {
			cfg.Faults = append(cfg.Faults, strings.TrimSpace(s))
		}
	}
	work, err := os.MkdirTemp("", "ticketd-chaos-")
	if err != nil {
		return err
	}
	if *keep {
		fmt.Fprintln(os.Stderr, "work dir:", work)
	} else {
		defer os.RemoveAll(work)
	}
	cfg.WorkDir, cfg.Log, cfg.TicketdBin = work, os.Stderr, *bin
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
	// Ctrl-C or SIGTERM end the run early; the phase in progress still
	// stops its processes and unmounts its tmpfs.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	rep, err := chaos.Run(ctx, cfg)
	if rep == nil {
		return err
	}
	if *results != "" {
		path, werr := rep.Write(*results)
		if werr != nil {
			return werr
		}
		fmt.Fprintln(os.Stderr, "wrote", path)
	}
	fmt.Println(rep.Markdown())
	if err != nil {
		return err
	}
	if rep.Failed() {
		return fmt.Errorf("some faults missed their requirements (see the verdict column)")
	}
	return nil
}
