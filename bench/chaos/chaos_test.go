package chaos

import (
	"ticketd/bench/load"

	"context"
	"encoding/json"
	"net/http"
	"net/smtp"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSupervisorRestartsAtTheSameAddress kills the supervised process (the
// test binary as the ceiling server) and checks it is started again on the
// same address, that the exit is recorded as SIGKILL, and that Stop's own
// exit is told apart.
func TestSupervisorRestartsAtTheSameAddress(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	addr, err := load.FreeAddr()
	require.NoError(t, err)
	sup, err := StartSupervisor(SupervisorSpec{
		Spec: func(int) load.ServerSpec {
			return load.ServerSpec{Bin: self, Env: []string{load.RoleEnv + "=" + load.RoleCeiling}, Bare: true, Extra: []string{"-addr", addr}}
		},
		RestartDelay: 10 * time.Millisecond, MaxStarts: 3, Logf: t.Logf,
	})
	require.NoError(t, err)
	defer sup.Stop(5 * time.Second)
	first := sup.Current()
	require.Equal(t, "http://"+addr, first.URL)

	killedAt := time.Now()
	pid, done := sup.Signal(syscall.SIGKILL)
	require.Equal(t, first.Pid(), pid)
	<-done
	second := sup.WaitUp(killedAt, 30*time.Second)
	require.NotNil(t, second, "not restarted")
	require.NotEqual(t, pid, second.Pid())
	require.Equal(t, "http://"+addr, second.URL)
	resp, err := http.Post(second.URL+"/", "application/json", strings.NewReader(`{"email":"a@b.c"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 201, resp.StatusCode)

	took, clean := sup.Stop(5 * time.Second)
	require.True(t, clean, "SIGTERM took %s", took)
	exits := sup.Exits()
	require.Len(t, exits, 2)
	require.Equal(t, "SIGKILL", exits[0].String())
	require.False(t, exits[0].AtStop)
	require.Equal(t, "0 at stop", exits[1].String())
	require.Equal(t, 2, sup.Starts())
}

// TestSupervisorRecordsExitStatusAndGivesUp supervises a process that
// exits 3 right after its banner: every exit is recorded with its status,
// the pause before a restart doubles in that crash loop (400 ms, then
// 800 ms), and the starts stop at MaxStarts.
func TestSupervisorRecordsExitStatusAndGivesUp(t *testing.T) {
	sup, err := StartSupervisor(SupervisorSpec{
		Spec: func(int) load.ServerSpec {
			return load.ServerSpec{Bin: "/bin/sh", Args: []string{"-c", "echo ticketd listening on http://127.0.0.1:9; sleep 0.2; exit 3"}, Bare: true}
		},
		RestartDelay: 200 * time.Millisecond, RestartDelayMax: 2 * time.Second, MaxStarts: 3,
	})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(sup.Exits()) == 3 && sup.Current() == nil }, 10*time.Second, 20*time.Millisecond)
	time.Sleep(500 * time.Millisecond) // no fourth start
	_, clean := sup.Stop(time.Second)
	require.True(t, clean)
	exits := sup.Exits()
	require.Len(t, exits, 3)
	for _, e := range exits {
		require.Equal(t, 3, e.Code)
		require.Equal(t, "3", e.String())
	}
	require.Equal(t, 3, sup.Starts())
	gap1, gap2 := exits[1].AtOffset-exits[0].AtOffset, exits[2].AtOffset-exits[1].AtOffset
	require.Greater(t, gap2, gap1+0.2, "the pause doubles in a crash loop (gaps %.2f s, %.2f s)", gap1, gap2)
}

// TestWritesBackAndOutage checks the two recovery figures on a probe
// record: a write outage from 1 s to 3 s after a fault at 0.
func TestWritesBackAndOutage(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	probes := []probe{
		{sent: at(-500), done: at(-490), ok: true},
		{sent: at(500), done: at(510), ok: true},
		{sent: at(1000), done: at(3000), ok: false},
		{sent: at(3000), done: at(3050), ok: true},
		{sent: at(3100), done: at(3110), ok: true},
	}
	require.Equal(t, at(510), writesBack(probes, t0))
	require.Equal(t, at(3050), writesBack(probes, at(2000)))
	require.True(t, writesBack(probes, at(4000)).IsZero())
	require.Equal(t, 2050*time.Millisecond, writeOutage(probes, t0))
	require.Equal(t, time.Duration(0), writeOutage(probes, at(3000)))
	// Never back: the outage runs to the last probe.
	require.Equal(t, 2000*time.Millisecond, writeOutage(probes[:3], t0))
}

// TestReadStatsWindow checks the read-only client's window and failures.
func TestReadStatsWindow(t *testing.T) {
	t0 := time.Now()
	var samples []readSample
	for i := range 100 {
		s := readSample{due: t0.Add(time.Duration(i) * 10 * time.Millisecond), us: 1000, status: 200}
		if i >= 50 && i < 60 {
			s.us, s.status = 5_000_000, 0 // timeouts during the fault
		}
		samples = append(samples, s)
	}
	fault := readStats(samples, t0.Add(500*time.Millisecond), t0.Add(600*time.Millisecond))
	require.EqualValues(t, 10, fault.Requests)
	require.EqualValues(t, 10, fault.Failed)
	require.Equal(t, map[int]int64{0: 10}, fault.Status)
	require.InDelta(t, 5000, fault.P99, 10)
	all := readStats(samples, time.Time{}, time.Time{})
	require.EqualValues(t, 100, all.Requests)
	require.EqualValues(t, 10, all.Failed)
	require.InDelta(t, 1, all.P50, 0.01)
	require.InDelta(t, 5000, all.P99, 10)
}

// TestRelayRefusesAndRecords sends mail through the relay with the
// standard library's client: 450 for the domain, 550 for the address, and
// the good recipient's arrival recorded.
func TestRelayRefusesAndRecords(t *testing.T) {
	r, err := StartRelay()
	require.NoError(t, err)
	defer r.Close()
	c, err := smtp.Dial(r.Addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Mail("tickets@localhost"))
	err = c.Rcpt("x@" + relayTempFailDomain)
	require.ErrorContains(t, err, "450")
	err = c.Rcpt(relayRefusedAddress)
	require.ErrorContains(t, err, "550")
	require.NoError(t, c.Rcpt("Good@Chaos.example"))
	w, err := c.Data()
	require.NoError(t, err)
	_, err = w.Write([]byte("Subject: ticket\r\n\r\nhello\r\n"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, c.Quit())
	_, ok := r.Arrived("good@chaos.example")
	require.True(t, ok)
	_, ok = r.Arrived("x@" + relayTempFailDomain)
	require.False(t, ok)
	require.EqualValues(t, 1, r.TempFails.Load())
	require.EqualValues(t, 1, r.Refusals.Load())
	require.EqualValues(t, 1, r.Messages.Load())
}

// TestChaosReportVerdicts checks the verdict rules and the files written.
func TestChaosReportVerdicts(t *testing.T) {
	cfg := QuickConfig()
	rep := newReport(&cfg)
	ok := FaultResult{Name: FaultKill9, OrdersAcked: 10, AckedChecked: 10, WritesBackS: 0.5, recoveredWrite: true, SigtermClean: true,
		Exits: []Exit{{Signal: "SIGKILL"}, {AtStop: true}}}
	lost := FaultResult{Name: FaultDiskFull, OrdersAcked: 10, AckedChecked: 10, AckedLost: 2, Oversold: 1, WritesBackS: -1, SigtermClean: false, Forced: "restart",
		ReadsFault: ReadStats{Requests: 10, Failed: 10, P99: 9500}}
	idle := FaultResult{Name: FaultIdleConns, OrdersAcked: 5, AckedChecked: 5, recoveredWrite: true, SigtermClean: true,
		Exits: []Exit{{Code: 1}, {AtStop: true}}, ReadsFault: ReadStats{Requests: 10, Failed: 4}}
	mail := FaultResult{Name: FaultSMTP, OrdersAcked: 5, AckedChecked: 5, recoveredWrite: true, SigtermClean: true,
		Mail: &MailStats{Confirmed: 9, Delivered: 3}}
	eio := FaultResult{Name: FaultFsyncEIO, OrdersAcked: 5, AckedChecked: 5, recoveredWrite: true, SigtermClean: true, faultExit: &Exit{Code: 0}}
	skipped := FaultResult{Name: FaultDiskFull, Skipped: "mount refused"}
	for _, f := range []FaultResult{ok, lost, idle, mail, eio, skipped} {
		f.judge()
		rep.Faults = append(rep.Faults, f)
	}
	require.Empty(t, rep.Faults[0].Failures)
	require.Contains(t, rep.Faults[1].Failures, "2 acknowledged orders lost")
	require.Contains(t, rep.Faults[1].Failures, "oversold")
	require.Contains(t, rep.Faults[1].Failures, "did not recover by itself")
	require.Contains(t, rep.Faults[1].Failures, "SIGTERM did not end it within the grace")
	require.Contains(t, rep.Faults[1].Failures, "reads not answered promptly during the fault (p99 9.5 s)")
	require.Contains(t, rep.Faults[2].Failures, "the service exited under the fault (1)")
	require.Contains(t, rep.Faults[2].Failures, "4 reads failed during the fault")
	require.Contains(t, rep.Faults[3].Failures, "6 good ticket mails not delivered")
	require.Contains(t, rep.Faults[4].Failures, "exited with status 0 after the fsync error")
	require.Empty(t, rep.Faults[5].Failures)
	require.True(t, rep.Failed())

	md := rep.Markdown()
	require.Contains(t, md, "| kill9 | 10 | 0 | 0 | 0.50 |")
	require.Contains(t, md, "SIGKILL, 0 at stop")
	require.Contains(t, md, "skipped: mount refused")
	dir := t.TempDir()
	path, err := rep.Write(dir)
	require.NoError(t, err)
	require.FileExists(t, path)
	require.FileExists(t, filepath.Join(dir, "chaos-latest.md"))
	b, err := os.ReadFile(strings.TrimSuffix(path, ".md") + ".json")
	require.NoError(t, err)
	var back Report
	require.NoError(t, json.Unmarshal(b, &back))
	require.Len(t, back.Faults, 6)
	require.Equal(t, 2, back.Faults[1].AckedLost)
}

// TestChaosKill9Tiny runs the kill -9 phase, tiny, against the service
// composed in the test binary: the whole path from supervisor to report,
// and every acknowledged order read back.
func TestChaosKill9Tiny(t *testing.T) {
	if testing.Short() {
		t.Skip("starts service processes")
	}
	self, err := os.Executable()
	require.NoError(t, err)
	cfg := QuickConfig()
	cfg.TicketdBin, cfg.TicketdRole, cfg.WorkDir = self, load.RoleService, t.TempDir()
	cfg.Faults = []string{FaultKill9}
	cfg.Conns, cfg.FloodOrders, cfg.Flood, cfg.FaultAt, cfg.ReadRate, cfg.SmallCapacity = 8, 3000, 2*time.Second, 700*time.Millisecond, 20, 50
	var log strings.Builder
	cfg.Log = &log
	rep, err := Run(context.Background(), cfg)
	t.Log(log.String())
	require.NoError(t, err)
	require.Len(t, rep.Faults, 1)
	f := rep.Faults[0]
	require.Empty(t, f.Error)
	require.Empty(t, f.Failures)
	require.Greater(t, f.OrdersAcked, 0)
	require.Equal(t, f.OrdersAcked, f.AckedChecked)
	require.Zero(t, f.AckedLost)
	require.Positive(t, f.SoldAfter)
	require.LessOrEqual(t, f.SoldAfter, 50)
	require.GreaterOrEqual(t, f.WritesBackS, 0.0)
	require.Equal(t, "SIGKILL", f.Exits[0].String())
	require.Equal(t, 2, f.Starts)
	require.Greater(t, f.ReadsAll.Requests, int64(10))
}
