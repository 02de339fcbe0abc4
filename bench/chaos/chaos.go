package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"ticketd/bench/load"
)

// Chaos faults, in run order.
const (
	FaultKill9     = "kill9"
	FaultDiskFull  = "disk-full"
	FaultFsyncEIO  = "fsync-eio"
	FaultIdleConns = "idle-conns"
	FaultSMTP      = "smtp-refusing"
)

// Faults are the faults of a chaos run, in run order.
var Faults = []string{FaultKill9, FaultDiskFull, FaultFsyncEIO, FaultIdleConns, FaultSMTP}

// Config holds the knobs of a chaos run; QuickConfig and
// FullConfig are the presets.
type Config struct {
	Quick      bool
	TicketdBin string
	// TicketdRole, when set, starts TicketdBin as that child role (go test
	// uses its own binary as the service).
	TicketdRole string
	WorkDir     string   // data dirs, mounts and logs; removed by the caller
	Faults      []string // which faults, in this order

	Conns         int           // flood connections
	FloodOrders   int           // bound on the flood's orders
	Flood         time.Duration // bound on the flood's length
	FaultAt       time.Duration // the fault starts this far into the flood
	FaultHold     time.Duration // how long a full disk or the idle connections last
	RecoverWait   time.Duration // how long writes may take to return after the fault's end before the harness restarts the service itself
	ExitWait      time.Duration // how long a process whose fsync failed may keep running before the harness ends it
	TermGrace     time.Duration // SIGTERM to SIGKILL
	ReadRate      float64       // read-only client requests per second
	SmallCapacity int           // the event that sells out
	TmpfsSize     string        // size of the full disk's tmpfs
	// DiskFloodRate paces the full disk's flood (orders per second) except
	// while the disk is full: a flood as fast as answered for the whole
	// phase would fill the tmpfs by itself (20 s of it used 62 MiB of 64),
	// so freeing the filler would not free the disk; while the disk is
	// full it runs as fast as answered, so the store needs new space (a
	// new WAL or sstable) within the hold, beyond what Pebble preallocated.
	DiskFloodRate float64
	IdleConns     int           // idle connections opened at once
	ServerNofile  int           // RLIMIT_NOFILE of the service in the idle-connection phase; 0 leaves it
	MailOrders    int           // orders placed and confirmed beside the refusing relay
	MailRate      float64       // their rate per second
	MailWait      time.Duration // after that flood, how long the rest of the mail may take

	Log io.Writer
}

// QuickConfig is the short preset (about 1.3 minutes on two cores).
func QuickConfig() Config {
	return Config{
		Quick: true, Conns: 32, FloodOrders: 30_000, Flood: 8 * time.Second, FaultAt: 3 * time.Second,
		FaultHold: 3 * time.Second, RecoverWait: 8 * time.Second, ExitWait: 6 * time.Second, TermGrace: 10 * time.Second,
		ReadRate: 50, SmallCapacity: 500, TmpfsSize: "256m", DiskFloodRate: 1000, IdleConns: 3000, ServerNofile: 1024,
		MailOrders: 150, MailRate: 50, MailWait: 10 * time.Second,
	}
}

// FullConfig is the preset of `make chaos`: about 2.5 minutes on two
// cores against today's service, which wedges on three faults. Every wait
// is bounded; a phase in which every wait runs out (the flood, the exit
// and recovery waits, two SIGTERM graces, the read-back's wait for a
// process) takes at most about two minutes.
func FullConfig() Config {
	return Config{
		Conns: 64, FloodOrders: 100_000, Flood: 20 * time.Second, FaultAt: 6 * time.Second,
		FaultHold: 5 * time.Second, RecoverWait: 15 * time.Second, ExitWait: 10 * time.Second, TermGrace: 10 * time.Second,
		ReadRate: 100, SmallCapacity: 2000, TmpfsSize: "256m", DiskFloodRate: 1000, IdleConns: 3000, ServerNofile: 1024,
		MailOrders: 600, MailRate: 60, MailWait: 20 * time.Second,
	}
}

// Validate checks the knobs.
func (c *Config) Validate() error {
	switch {
	case c.TicketdBin == "" || c.WorkDir == "":
		return errors.New("bench: chaos config: binary and work dir are required")
	case c.Conns < 1 || c.FloodOrders < 1 || c.SmallCapacity < 1 || c.IdleConns < 0 || c.MailOrders < 1:
		return errors.New("bench: chaos config: counts must be positive")
	case c.Flood <= 0 || c.FaultAt <= 0 || c.FaultAt >= c.Flood || c.FaultHold <= 0 || c.RecoverWait <= 0 || c.ExitWait <= 0 || c.TermGrace <= 0 || c.MailWait <= 0:
		return errors.New("bench: chaos config: durations must be positive and the fault inside the flood")
	case c.ReadRate <= 0 || c.ReadRate > 10_000 || c.MailRate <= 0 || c.DiskFloodRate < 0:
		return errors.New("bench: chaos config: rates must be positive (reads at most 10,000/s)")
	}
	for _, f := range c.Faults {
		if !contains(Faults, f) {
			return fmt.Errorf("bench: chaos config: unknown fault %q (want %s)", f, strings.Join(Faults, ","))
		}
	}
	if len(c.Faults) == 0 {
		c.Faults = Faults
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

type chaos struct {
	cfg *Config
}

func (h *chaos) logf(format string, args ...any) {
	fmt.Fprintf(h.cfg.Log, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// Run runs every fault of cfg in turn and returns the report. A phase
// that cannot run records its error and the next one still runs; ctx ends
// the run early (children and mounts are cleaned up either way).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	h := &chaos{cfg: &cfg}
	rep := newReport(&cfg)
	for _, name := range cfg.Faults {
		if ctx.Err() != nil {
			break
		}
		h.logf("== %s", name)
		f := h.phase(ctx, name)
		f.judge()
		if f.Skipped != "" {
			h.logf("   skipped: %s", f.Skipped)
		} else {
			h.logf("   acked %d lost %d oversold %d writes back %s s, read p99 %.1f ms (fault) %.1f ms (all), exits %s, failures %v",
				f.OrdersAcked, f.AckedLost, f.Oversold+int(f.OversoldReads), secs(f.WritesBackS), f.ReadsFault.P99, f.ReadsAll.P99, exitList(f.Exits), f.Failures)
		}
		rep.Faults = append(rep.Faults, f)
	}
	return rep, ctx.Err()
}

var faultText = map[string]string{
	FaultKill9:     "SIGKILL of the service mid-flood; the supervisor restarts it.",
	FaultDiskFull:  "The data dir on a small tmpfs, filled to the last byte by a filler file mid-flood; the filler is deleted after the hold.",
	FaultFsyncEIO:  "strace attached to the service mid-flood makes every fdatasync and fsync fail with EIO; the process must exit non-zero by itself (fail-stop), and the supervisor restarts it without strace.",
	FaultIdleConns: "Many idle TCP connections opened at once mid-flood from 127.0.0.2 (the other clients are 127.0.0.1), held, then closed; the service runs with a low RLIMIT_NOFILE (soft = hard) as under `ulimit -n`.",
	FaultSMTP:      "An SMTP relay that answers 450 at RCPT for one domain and 550 for one address; one buyer in ten in that domain and one in ten with that address; orders placed and confirmed (free: a ticket mail each) at a fixed rate.",
}

// phase runs one fault on a fresh data dir.
func (h *chaos) phase(ctx context.Context, name string) (f FaultResult) {
	f = FaultResult{Name: name, Fault: faultText[name], Capacity: h.cfg.SmallCapacity, WritesBackS: -1}
	dir := filepath.Join(h.cfg.WorkDir, name)
	dataDir := filepath.Join(dir, "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.Error = err.Error()
		return f
	}
	var cleanups []func()
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}()
	var env []string
	var relay *Relay
	switch name {
	case FaultDiskFull:
		mnt := filepath.Join(dir, "tmpfs")
		if err := mountTmpfs(mnt, h.cfg.TmpfsSize); err != nil {
			f.Skipped = err.Error()
			return f
		}
		cleanups = append(cleanups, func() { h.unmount(mnt) })
		dataDir = filepath.Join(mnt, "data")
	case FaultSMTP:
		r, err := StartRelay()
		if err != nil {
			f.Error = err.Error()
			return f
		}
		relay = r
		cleanups = append(cleanups, func() { _ = r.Close() })
		env = append(env, "TICKETD_SMTP_ADDR="+r.Addr)
	case FaultFsyncEIO:
		if _, err := exec.LookPath("strace"); err != nil {
			f.Skipped = "strace is not installed"
			return f
		}
	}
	addr, err := load.FreeAddr()
	if err != nil {
		f.Error = err.Error()
		return f
	}
	sup, err := StartSupervisor(SupervisorSpec{
		Spec:         func(int) load.ServerSpec { return h.serverSpec(name, dataDir, addr, env) },
		RestartDelay: 200 * time.Millisecond, RestartDelayMax: 2 * time.Second, MaxStarts: 60, Logf: h.logf,
	})
	if err != nil {
		f.Error = err.Error()
		return f
	}
	// The final stop is part of the figures: SIGTERM must end the service
	// within the grace in every state.
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			took, clean := sup.Stop(h.cfg.TermGrace)
			f.SigtermS, f.SigtermClean = took.Seconds(), clean
			f.Exits, f.Starts = sup.Exits(), sup.Starts()
		}
	}
	defer stop()
	sk, pk := sup.Keys()
	base := sup.Current().URL
	c, err := load.NewClient(base, 8)
	if err != nil {
		f.Error = err.Error()
		return f
	}
	c.HC.ReadTimeout, c.HC.WriteTimeout = chaosTimeout, chaosTimeout
	big, err := c.CreateEvent(sk, "Chaos flood", 10_000_000)
	if err != nil {
		f.Error = err.Error()
		return f
	}
	small, err := c.CreateEvent(sk, "Chaos sell-out", h.cfg.SmallCapacity)
	if err != nil {
		f.Error = err.Error()
		return f
	}

	host := strings.TrimPrefix(base, "http://")
	start := time.Now()
	hardEnd := start.Add(h.cfg.Flood + h.cfg.ExitWait + h.cfg.TermGrace + 2*h.cfg.RecoverWait + h.cfg.MailWait + time.Minute)
	// A read on a kept-alive connection the service has just closed (a
	// connection cap reclaims the longest idle ones) is sent again once, as
	// browsers and HTTP libraries do for idempotent requests; its latency
	// counts both attempts. Orders are never resent.
	readHC := newChaosClient(host, 16)
	readHC.MaxIdemponentCallAttempts = 2
	reader := &chaosReader{hc: readHC, base: base, sk: sk, pk: pk, big: big, small: small, rate: h.cfg.ReadRate, workers: 16}
	prober := &chaosProber{hc: newChaosClient(host, 1), base: base, pk: pk, e: big, prefix: name + "-probe-", interval: 100 * time.Millisecond}
	flood := &chaosFlood{hc: newChaosClient(host, h.cfg.Conns), base: base, pk: pk, big: big, small: small, prefix: name + "-",
		max: int64(h.cfg.FloodOrders), conns: h.cfg.Conns, until: start.Add(h.cfg.Flood)}
	if name == FaultDiskFull {
		flood.rate = h.cfg.DiskFloodRate
	}
	prober.ack = &flood.ackBig
	ready := &readyPoller{hc: newChaosClient(host, 1), base: base, interval: 200 * time.Millisecond}
	rctx, endReads := context.WithCancel(ctx)
	proberStop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Add(3)
	go func() { defer bg.Done(); reader.run(rctx, hardEnd) }()
	go func() { defer bg.Done(); prober.run(rctx, proberStop, hardEnd) }()
	go func() { defer bg.Done(); ready.run(rctx, proberStop, hardEnd) }()
	endBackground := func() {
		endReads()
		close(proberStop)
		bg.Wait()
	}
	var faultStart, faultEnd time.Time
	var mf *mailFlood
	if name == FaultSMTP {
		mf = &mailFlood{hc: newChaosClient(host, 8), base: base, pk: pk, e: big, n: h.cfg.MailOrders, rate: h.cfg.MailRate, until: start.Add(h.cfg.Flood)}
		faultStart = time.Now()
		mf.run(ctx)
		faultEnd = time.Now()
		f.Mail = h.waitMail(ctx, mf, relay)
	} else {
		var fw sync.WaitGroup
		fw.Add(1)
		go func() {
			defer fw.Done()
			select {
			case <-ctx.Done():
				return
			case <-time.After(h.cfg.FaultAt):
			}
			faultStart, faultEnd = h.inject(ctx, name, sup, dataDir, host, &f, flood)
		}()
		flood.run(ctx)
		fw.Wait()
	}
	if faultStart.IsZero() {
		endBackground()
		f.Error = "interrupted before the fault"
		return f
	}
	// Writes must come back by themselves within RecoverWait of the
	// fault's end; if not, the harness restarts the service as an operator
	// would, so the acknowledged orders can still be read back.
	back := h.waitWrites(ctx, prober, faultEnd, faultEnd.Add(h.cfg.RecoverWait))
	if back.IsZero() && ctx.Err() == nil {
		took, clean := sup.Terminate(h.cfg.TermGrace)
		how := fmt.Sprintf("restart it (writes not back %.0f s after the fault's end); its SIGTERM took %.1f s", h.cfg.RecoverWait.Seconds(), took.Seconds())
		if !clean {
			how += " and did not end it: SIGKILL"
		}
		f.Forced = how
		back = h.waitWrites(ctx, prober, faultEnd, time.Now().Add(h.cfg.RecoverWait))
	}
	if !back.IsZero() {
		f.recoveredWrite = true
		f.WritesBackS = back.Sub(faultEnd).Seconds()
	}
	f.WriteOutageS = prober.outage(faultStart).Seconds()
	if f.WriteOutageS == 0 && name != FaultSMTP && name != FaultIdleConns {
		f.Notes = append(f.Notes, "no probe write failed after the fault started: the fault did not bite")
	}
	endBackground()
	f.FaultStart, f.FaultEnd = faultStart.Sub(start).Seconds(), faultEnd.Sub(start).Seconds()
	windowEnd := faultEnd
	if back.After(windowEnd) {
		windowEnd = back
	}
	f.ReadsFault = reader.stats(faultStart, windowEnd)
	f.ReadsAll = reader.stats(time.Time{}, time.Time{})
	f.Readyz = ready.stats(faultStart, windowEnd)
	f.OversoldReads = reader.over.Load()

	// Read every acknowledged order back from the service as it now runs.
	if sup.WaitUp(time.Time{}, 30*time.Second) == nil {
		f.Error = "no service process running to read the orders back from"
		return f
	}
	// A fresh client: the old one's keep-alive connections may lead to a
	// process that is gone.
	if c, err = load.NewClient(base, 8); err != nil {
		f.Error = err.Error()
		return f
	}
	c.HC.ReadTimeout, c.HC.WriteTimeout = chaosTimeout, chaosTimeout
	f.OrdersSent = flood.sent.Load() + int64(len(prober.probes))
	f.OrderStatus = flood.status.snapshot()
	ackSets := []struct {
		e load.EventSetup
		a *load.Acks
	}{{big, &flood.ackBig}, {small, &flood.ackSm}}
	if mf != nil {
		f.OrdersSent = int64(mf.n) + int64(len(prober.probes))
		f.OrderStatus = mf.status.snapshot()
		mf.ack.Mu.Lock()
		flood.ackBig.Mu.Lock()
		flood.ackBig.All = append(flood.ackBig.All, mf.ack.All...)
		flood.ackBig.Mu.Unlock()
		mf.ack.Mu.Unlock()
	}
	for _, s := range ackSets {
		f.OrdersAcked += s.a.N()
	}
	for _, s := range ackSets {
		checked, missing, err := lostOrders(c, sk, s.e, s.a)
		if err != nil {
			f.Error = "read back: " + err.Error()
			return f
		}
		f.AckedChecked += checked
		f.AckedLost += missing
	}
	if a, err := c.Availability(sk, small); err != nil {
		f.Error = "availability: " + err.Error()
	} else {
		f.SoldAfter = a.Held + a.Confirmed
		f.Oversold = max(0, f.SoldAfter-a.Capacity)
	}
	stop()
	return f
}

// serverSpec is how the service of a phase starts. Every start runs under
// setpriv --pdeathsig, so no service outlives a harness that dies.
func (h *chaos) serverSpec(name, dataDir, addr string, env []string) load.ServerSpec {
	args := []string{"serve"}
	if h.cfg.TicketdRole != "" {
		args, env = nil, append(env, load.RoleEnv+"="+h.cfg.TicketdRole)
	}
	bin := h.cfg.TicketdBin
	if name == FaultIdleConns && h.cfg.ServerNofile > 0 {
		if p, err := exec.LookPath("prlimit"); err == nil {
			args = append([]string{fmt.Sprintf("--nofile=%d:%d", h.cfg.ServerNofile, h.cfg.ServerNofile), "--", bin}, args...)
			bin = p
		}
	}
	extra := []string{"-addr", addr}
	// StartServer lifts the per-client-IP connection cap for load runs
	// from loopback; against an attacker the service's own default is the
	// point (the flood and the readers stay far below it). Older binaries
	// have no such flag.
	if name == FaultIdleConns && h.cfg.TicketdRole == "" && hasServeFlag(h.cfg.TicketdBin, "max-conns-per-ip") {
		extra = append(extra, "-max-conns-per-ip", "1024")
	}
	if p, err := exec.LookPath("setpriv"); err == nil {
		args = append([]string{"--pdeathsig", "KILL", "--", bin}, args...)
		bin = p
	}
	return load.ServerSpec{Bin: bin, Args: args, DataDir: dataDir, Env: env,
		LogFile: filepath.Join(h.cfg.WorkDir, "logs", name+".log"), Extra: extra}
}

// hasServeFlag reports whether `bin serve -h` lists -flag.
func hasServeFlag(bin, flag string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bin, "serve", "-h").CombinedOutput()
	return strings.Contains(string(out), "-"+flag+" ")
}

// waitWrites waits until a probe sent at or after from succeeded, or until
// deadline; it returns when the write succeeded (zero on timeout).
func (h *chaos) waitWrites(ctx context.Context, p *chaosProber, from, deadline time.Time) time.Time {
	for ctx.Err() == nil {
		if t := p.backAfter(from); !t.IsZero() {
			return t
		}
		if time.Now().After(deadline) {
			return time.Time{}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Time{}
}

// inject performs the fault and returns when it started and ended.
func (h *chaos) inject(ctx context.Context, name string, sup *Supervisor, dataDir, host string, f *FaultResult, flood *chaosFlood) (start, end time.Time) {
	start = time.Now()
	switch name {
	case FaultKill9:
		pid, done := sup.Signal(syscall.SIGKILL)
		if done != nil {
			<-done
		}
		h.logf("   SIGKILL to pid %d", pid)
		return start, start
	case FaultDiskFull:
		filler := filepath.Join(filepath.Dir(dataDir), "filler")
		var fs syscall.Statfs_t
		if syscall.Statfs(filepath.Dir(dataDir), &fs) == nil {
			used := float64((fs.Blocks-fs.Bfree)*uint64(fs.Bsize)) / (1 << 20)
			f.Notes = append(f.Notes, fmt.Sprintf("the data dir used %.1f MiB of the tmpfs when the filler was written", used))
		}
		n, err := fillDisk(filler)
		h.logf("   filler of %d MiB written (%v)", n>>20, err)
		f.Notes = append(f.Notes, fmt.Sprintf("filler of %.1f MiB left the tmpfs full (%v)", float64(n)/(1<<20), err))
		flood.burst.Store(true)
		sleepCtx(ctx, h.cfg.FaultHold)
		flood.burst.Store(false)
		_ = os.Remove(filler)
		return start, time.Now()
	case FaultFsyncEIO:
		return h.injectEIO(ctx, sup, f)
	case FaultIdleConns:
		conns := openIdle(ctx, host, h.cfg.IdleConns, 10*time.Second)
		h.logf("   %d idle connections open", len(conns))
		f.Notes = append(f.Notes, fmt.Sprintf("%d of %d idle connections opened (RLIMIT_NOFILE of the service %d)", len(conns), h.cfg.IdleConns, h.cfg.ServerNofile))
		sleepCtx(ctx, h.cfg.FaultHold)
		if pid, _ := sup.Exited(); pid == 0 {
			f.Notes = append(f.Notes, "the service process was gone at the end of the idle-connection hold")
		}
		for _, c := range conns {
			_ = c.Close()
		}
		return start, time.Now()
	}
	return start, start
}

// injectEIO attaches strace to the running service so that every fsync and
// fdatasync from now on fails with EIO, and waits for the process to exit.
// One that keeps running past ExitWait is ended by the harness (SIGTERM,
// then SIGKILL), which the report counts against it.
func (h *chaos) injectEIO(ctx context.Context, sup *Supervisor, f *FaultResult) (time.Time, time.Time) {
	pid, exited := sup.Exited()
	start := time.Now()
	if pid == 0 {
		f.Notes = append(f.Notes, "no process to inject into")
		return start, start
	}
	out := filepath.Join(h.cfg.WorkDir, "logs", "strace.log")
	st := exec.Command("strace", "-f", "-qq", "-p", fmt.Sprint(pid), "-o", out,
		"-e", "trace=fdatasync,fsync", "-e", "inject=fdatasync:error=EIO", "-e", "inject=fsync:error=EIO")
	if err := st.Start(); err != nil {
		f.Error = "strace: " + err.Error()
		return start, start
	}
	straceDone := make(chan struct{})
	go func() { _ = st.Wait(); close(straceDone) }()
	defer func() {
		_ = st.Process.Signal(syscall.SIGTERM) // detaches
		select {
		case <-straceDone:
		case <-time.After(5 * time.Second):
			_ = st.Process.Kill()
			<-straceDone
		}
		if b, err := os.ReadFile(out); err == nil {
			f.Notes = append(f.Notes, fmt.Sprintf("strace injected EIO into %d fsync/fdatasync calls", strings.Count(string(b), "(INJECTED)")))
		}
	}()
	h.logf("   strace attached to pid %d: fsync and fdatasync fail with EIO", pid)
	select {
	case <-exited:
		for _, e := range sup.Exits() {
			if e.Pid == pid {
				f.faultExit = &e
				f.Notes = append(f.Notes, fmt.Sprintf("the process exited by itself %.2f s after the injection, status %s", time.Since(start).Seconds(), e))
			}
		}
		return start, time.Now()
	case <-time.After(h.cfg.ExitWait):
	case <-ctx.Done():
	}
	// Still running: what does it answer now?
	f.Notes = append(f.Notes, fmt.Sprintf("the process was still running %.0f s after the injected EIO", h.cfg.ExitWait.Seconds()))
	// Detach first, so SIGTERM meets the process as the fault left it.
	_ = st.Process.Signal(syscall.SIGTERM)
	select {
	case <-straceDone:
	case <-time.After(5 * time.Second):
	}
	took, clean := sup.Terminate(h.cfg.TermGrace)
	msg := fmt.Sprintf("end the process whose fsync failed (%.0f s after the injection it still ran); SIGTERM took %.1f s", h.cfg.ExitWait.Seconds(), took.Seconds())
	if !clean {
		msg += " and did not end it: SIGKILL"
	}
	f.Forced = msg
	return start, time.Now()
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// fillDisk writes zeros to path until the file system is full (bounded at
// 1 GiB) and returns the bytes written.
func fillDisk(path string) (int64, error) {
	fh, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer fh.Close()
	buf := make([]byte, 1<<20)
	var n int64
	for n < 1<<30 {
		w, err := fh.Write(buf)
		n += int64(w)
		if err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				// Fill the last partial block too.
				for _, sz := range []int{64 << 10, 4 << 10, 512} {
					for {
						w, err := fh.Write(buf[:sz])
						n += int64(w)
						if err != nil {
							break
						}
					}
				}
				return n, nil
			}
			return n, err
		}
	}
	return n, errors.New("bench: fill disk: 1 GiB written and not full")
}

// idleSource is the idle connections' source address: another client than
// the flood and the read-only client (127.0.0.1), as an attacker would be,
// so a per-client-IP connection cap limits the attacker, not the readers.
var idleSource = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}

// openIdle opens up to n TCP connections to addr from idleSource that send
// nothing, with 32 dialers and the whole step bounded by d.
func openIdle(ctx context.Context, addr string, n int, d time.Duration) []net.Conn {
	deadline := time.Now().Add(d)
	var mu sync.Mutex
	var conns []net.Conn
	next := make(chan struct{}, n)
	for range n {
		next <- struct{}{}
	}
	close(next)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dialer := net.Dialer{Timeout: time.Second, LocalAddr: idleSource}
			for range next {
				if ctx.Err() != nil || time.Now().After(deadline) {
					return
				}
				c, err := dialer.DialContext(ctx, "tcp", addr)
				if err != nil {
					continue
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return conns
}

// waitMail waits up to MailWait for the relay to receive the ticket mail
// of every confirmed good address, then summarises delivery.
func (h *chaos) waitMail(ctx context.Context, m *mailFlood, r *Relay) *MailStats {
	t := time.Now()
	m.mu.Lock()
	owed := make(map[string]time.Time, len(m.confirmed))
	for a, at := range m.confirmed {
		owed[a] = at
	}
	bad := m.bad
	m.mu.Unlock()
	deadline := t.Add(h.cfg.MailWait)
	var delays []float64
	for {
		delays = delays[:0]
		for a, at := range owed {
			if got, ok := r.Arrived(a); ok {
				delays = append(delays, max(0, got.Sub(at).Seconds()))
			}
		}
		if len(delays) == len(owed) || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	ms := &MailStats{Confirmed: len(owed), ConfirmedBad: bad, Delivered: len(delays), TempFails: r.TempFails.Load(),
		Refusals: r.Refusals.Load(), WaitedS: time.Since(t).Seconds()}
	if len(owed) > 0 {
		ms.DeliveredShare = float64(len(delays)) / float64(len(owed))
	}
	if len(delays) > 0 {
		sort.Float64s(delays)
		q := func(p float64) float64 { return delays[min(len(delays)-1, int(p*float64(len(delays))))] }
		ms.P50S, ms.P99S, ms.MaxS = q(0.5), q(0.99), delays[len(delays)-1]
	}
	h.logf("   mail: %d owed, %d delivered, 450 x%d, 550 x%d", ms.Confirmed, ms.Delivered, ms.TempFails, ms.Refusals)
	return ms
}

// mountTmpfs mounts a tmpfs of size at dir.
func mountTmpfs(dir, size string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mount -t tmpfs refused: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// unmount unmounts dir, lazily when it is still busy.
func (h *chaos) unmount(dir string) {
	if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
		h.logf("   umount %s: %v: %s; lazy unmount", dir, err, strings.TrimSpace(string(out)))
		_ = exec.Command("umount", "-l", dir).Run()
	}
}
