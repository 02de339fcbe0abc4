package chaos

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"ticketd/bench/load"
)

// Report is what one chaos run saw, fault by fault.
type Report struct {
	Date      time.Time     `json:"date"`
	Machine   string        `json:"machine"`
	CPU       string        `json:"cpu"`
	NumCPU    int           `json:"numCpu"`
	GoVersion string        `json:"goVersion"`
	Quick     bool          `json:"quick"`
	Config    string        `json:"config"`
	Faults    []FaultResult `json:"faults"`
}

// FaultResult is one fault's phase: a fresh data dir, a supervised
// service, an order flood with the fault injected in its middle, and a
// read-only client beside it. Times are seconds since the flood started.
type FaultResult struct {
	Name    string `json:"name"`
	Fault   string `json:"fault"` // what was done
	Skipped string `json:"skipped,omitempty"`
	Error   string `json:"error,omitempty"` // the phase could not finish

	OrdersSent     int64         `json:"ordersSent"`
	OrdersAcked    int           `json:"ordersAcknowledged"` // flood and probe orders answered 2xx
	OrderStatus    map[int]int64 `json:"orderStatus"`
	AckedChecked   int           `json:"acknowledgedChecked"` // read back after the run
	AckedLost      int           `json:"acknowledgedLost"`
	Capacity       int           `json:"smallCapacity"`
	SoldAfter      int           `json:"smallSoldAfter"` // held + confirmed of the small event after the run
	Oversold       int           `json:"oversold"`       // above capacity after the run
	OversoldReads  int64         `json:"oversoldReads"`  // reads during the run that showed more than capacity
	FaultStart     float64       `json:"faultStart"`
	FaultEnd       float64       `json:"faultEnd"`
	WritesBackS    float64       `json:"writesBackSeconds"` // from the fault's end to the first write that succeeded; -1 never
	WriteOutageS   float64       `json:"writeOutageSeconds"`
	Forced         string        `json:"forced,omitempty"` // what the harness had to do because the service did not recover
	ReadsFault     ReadStats     `json:"readsDuringFault"`
	ReadsAll       ReadStats     `json:"readsOverall"`
	Readyz         ReadyStats    `json:"readyzDuringFault"`
	Exits          []Exit        `json:"exits"`
	Starts         int           `json:"starts"`
	SigtermS       float64       `json:"sigtermSeconds"` // the final SIGTERM's exit time
	SigtermClean   bool          `json:"sigtermClean"`   // it exited within the grace
	Mail           *MailStats    `json:"mail,omitempty"`
	Notes          []string      `json:"notes,omitempty"`
	Failures       []string      `json:"failures,omitempty"` // requirements this phase missed
	recoveredWrite bool
	faultExit      *Exit // the exit of the process the fsync fault was injected into, when it exited by itself
}

// MailStats is what the refusing relay received.
type MailStats struct {
	Confirmed      int     `json:"confirmedGood"` // confirmed orders of good addresses: ticket mails owed
	ConfirmedBad   int     `json:"confirmedRefused"`
	Delivered      int     `json:"deliveredGood"`
	DeliveredShare float64 `json:"deliveredShare"`
	P50S           float64 `json:"deliveryP50Seconds"` // confirm -> arrival
	P99S           float64 `json:"deliveryP99Seconds"`
	MaxS           float64 `json:"deliveryMaxSeconds"`
	TempFails      int64   `json:"relay450"`
	Refusals       int64   `json:"relay550"`
	WaitedS        float64 `json:"waitedSeconds"` // after the flood, for the rest
}

// promptMs is the read latency, from its due time, above which a read
// during a fault was not answered promptly.
const promptMs = 5000

func newReport(cfg *Config) *Report {
	host, _ := os.Hostname()
	return &Report{
		Date: time.Now().UTC(), Machine: host, CPU: load.CPUModel(), NumCPU: runtime.NumCPU(),
		GoVersion: runtime.Version(), Quick: cfg.Quick,
		Config: fmt.Sprintf("conns=%d flood=%s/%d orders fault-at=%s hold=%s recover-wait=%s exit-wait=%s reads=%.0f/s small-capacity=%d tmpfs=%s disk-flood=%.0f/s idle-conns=%d nofile=%d mail=%d@%.0f/s",
			cfg.Conns, cfg.Flood, cfg.FloodOrders, cfg.FaultAt, cfg.FaultHold, cfg.RecoverWait, cfg.ExitWait, cfg.ReadRate,
			cfg.SmallCapacity, cfg.TmpfsSize, cfg.DiskFloodRate, cfg.IdleConns, cfg.ServerNofile, cfg.MailOrders, cfg.MailRate),
	}
}

// judge fills Failures from the figures: nothing acknowledged lost, no
// oversell, writes back by themselves, exits within the SIGTERM grace and,
// for the relay, every good address's mail delivered.
func (f *FaultResult) judge() {
	if f.Skipped != "" {
		return
	}
	if f.Error != "" {
		f.Failures = append(f.Failures, "phase error")
	}
	if f.AckedLost > 0 {
		f.Failures = append(f.Failures, fmt.Sprintf("%d acknowledged orders lost", f.AckedLost))
	}
	if f.AckedChecked < f.OrdersAcked {
		f.Failures = append(f.Failures, "acknowledged orders not all read back")
	}
	if f.Oversold > 0 || f.OversoldReads > 0 {
		f.Failures = append(f.Failures, "oversold")
	}
	if f.Forced != "" {
		f.Failures = append(f.Failures, "did not recover by itself")
	} else if !f.recoveredWrite && f.Mail == nil {
		f.Failures = append(f.Failures, "writes never came back")
	}
	var died []string
	for _, e := range f.Exits {
		if !e.AtStop {
			died = append(died, e.String())
		}
	}
	if (f.Name == FaultIdleConns || f.Name == FaultSMTP) && len(died) > 0 {
		f.Failures = append(f.Failures, "the service exited under the fault ("+strings.Join(died, ", ")+")")
	}
	// Within 5 s of a fault every request gets a prompt answer (or the
	// process exits and refuses connections): a read that waited longer,
	// counted from when it was due, was not answered promptly.
	if f.ReadsFault.P99 > promptMs {
		f.Failures = append(f.Failures, fmt.Sprintf("reads not answered promptly during the fault (p99 %.1f s)", f.ReadsFault.P99/1000))
	}
	if f.Name == FaultIdleConns && f.ReadsFault.Failed > 0 {
		f.Failures = append(f.Failures, fmt.Sprintf("%d reads failed during the fault", f.ReadsFault.Failed))
	}
	if f.faultExit != nil && f.faultExit.Code == 0 && f.faultExit.Signal == "" {
		f.Failures = append(f.Failures, "exited with status 0 after the fsync error")
	}
	if !f.SigtermClean {
		f.Failures = append(f.Failures, "SIGTERM did not end it within the grace")
	}
	if f.Mail != nil && f.Mail.Delivered < f.Mail.Confirmed {
		f.Failures = append(f.Failures, fmt.Sprintf("%d good ticket mails not delivered", f.Mail.Confirmed-f.Mail.Delivered))
	}
}

// Failed reports whether any phase missed a requirement.
func (r *Report) Failed() bool {
	for _, f := range r.Faults {
		if len(f.Failures) > 0 {
			return true
		}
	}
	return false
}

func secs(v float64) string {
	if v < 0 {
		return "never"
	}
	return fmt.Sprintf("%.2f", v)
}

func exitList(exits []Exit) string {
	if len(exits) == 0 {
		return "-"
	}
	parts := make([]string, len(exits))
	for i, e := range exits {
		parts[i] = e.String()
	}
	return strings.Join(parts, ", ")
}

// Markdown renders the report.
func (r *Report) Markdown() string {
	var b strings.Builder
	mode := "full"
	if r.Quick {
		mode = "quick"
	}
	fmt.Fprintf(&b, "# ticketd chaos run, %s\n\n", r.Date.Format(time.RFC3339))
	fmt.Fprintf(&b, "Machine `%s` (%s, %d CPUs), %s, mode %s.  \nKnobs: `%s`.\n\n", r.Machine, r.CPU, r.NumCPU, r.GoVersion, mode, r.Config)
	b.WriteString("Each fault on a fresh data dir, the service supervised (restarted whenever it exits, as systemd's `Restart=always`), " +
		"an order flood with the fault in its middle, a read-only client at a fixed rate beside it, and one probe order every 100 ms. " +
		"*Writes back* is from the fault's end (the kill, the filler's removal, the faulty process's exit, the idle connections' close) to the first probe that succeeded; " +
		"*during fault* is from the fault's start to the later of its end and the writes' return.\n\n")
	b.WriteString("| fault | acked orders | lost | oversold | writes back after s | write outage s | read p99 ms during fault | read p99 ms overall | reads failed (fault / all) | exits | SIGTERM s | verdict |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|---|\n")
	for _, f := range r.Faults {
		if f.Skipped != "" {
			fmt.Fprintf(&b, "| %s | - | - | - | - | - | - | - | - | - | - | skipped: %s |\n", f.Name, f.Skipped)
			continue
		}
		verdict := "ok"
		if len(f.Failures) > 0 {
			verdict = "**FAIL**: " + strings.Join(f.Failures, "; ")
		}
		back := secs(f.WritesBackS)
		if f.Mail != nil {
			back = "n/a"
		}
		term := fmt.Sprintf("%.1f", f.SigtermS)
		if !f.SigtermClean {
			term += " (killed)"
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %s | %.2f | %.1f | %.1f | %d / %d | %s | %s | %s |\n",
			f.Name, f.OrdersAcked, f.AckedLost, f.Oversold+int(f.OversoldReads), back, f.WriteOutageS,
			f.ReadsFault.P99, f.ReadsAll.P99, f.ReadsFault.Failed, f.ReadsAll.Failed, exitList(f.Exits), term, verdict)
	}
	for _, f := range r.Faults {
		if f.Skipped != "" {
			continue
		}
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n", f.Name, f.Fault)
		fmt.Fprintf(&b, "- orders sent %d, acknowledged %d, read back %d, lost %d; statuses %s\n", f.OrdersSent, f.OrdersAcked, f.AckedChecked, f.AckedLost, load.Statuses(f.OrderStatus))
		fmt.Fprintf(&b, "- small event: capacity %d, held + confirmed after the run %d; reads above capacity during the run %d\n", f.Capacity, f.SoldAfter, f.OversoldReads)
		fmt.Fprintf(&b, "- fault from %.2f s to %.2f s of the flood; writes back %s s after its end; longest write outage %.2f s\n", f.FaultStart, f.FaultEnd, secs(f.WritesBackS), f.WriteOutageS)
		fmt.Fprintf(&b, "- reads during the fault: %d (%s), failed %d, p50 %.1f ms, p99 %.1f ms, max %.1f ms; overall: %d (%s), failed %d, p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
			f.ReadsFault.Requests, load.Statuses(f.ReadsFault.Status), f.ReadsFault.Failed, f.ReadsFault.P50, f.ReadsFault.P99, f.ReadsFault.Max,
			f.ReadsAll.Requests, load.Statuses(f.ReadsAll.Status), f.ReadsAll.Failed, f.ReadsAll.P50, f.ReadsAll.P99, f.ReadsAll.Max)
		fmt.Fprintf(&b, "- processes started %d; exits %s\n", f.Starts, exitList(f.Exits))
		first := "never"
		if f.Readyz.First503S >= 0 {
			first = fmt.Sprintf("%.2f s after its start", f.Readyz.First503S)
		}
		fmt.Fprintf(&b, "- /readyz during the fault (status:count, 0 no answer): %s; first 503: %s\n", load.Statuses(f.Readyz.Status), first)
		if f.Forced != "" {
			fmt.Fprintf(&b, "- the harness had to: %s\n", f.Forced)
		}
		if m := f.Mail; m != nil {
			fmt.Fprintf(&b, "- ticket mail: %d owed to good addresses, %d delivered (%.0f%%), confirm -> arrival p50 %.2f s, p99 %.2f s, max %.2f s; relay answered 450 %d times and 550 %d times; %d confirmed orders of refused addresses; waited %.1f s after the flood\n",
				m.Confirmed, m.Delivered, 100*m.DeliveredShare, m.P50S, m.P99S, m.MaxS, m.TempFails, m.Refusals, m.ConfirmedBad, m.WaitedS)
		}
		if f.Error != "" {
			fmt.Fprintf(&b, "- phase error: %s\n", f.Error)
		}
		for _, n := range f.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	return b.String()
}

// Write stores the report as chaos-<stamp>.json and .md in dir, and the
// Markdown again as chaos-latest.md.
func (r *Report) Write(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("bench: results dir: %w", err)
	}
	stamp := "chaos-" + r.Date.Format("20060102-150405")
	if r.Quick {
		stamp += "-quick"
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("bench: encode chaos report: %w", err)
	}
	md := []byte(r.Markdown())
	for name, data := range map[string][]byte{stamp + ".json": js, stamp + ".md": md, "chaos-latest.md": md} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return "", fmt.Errorf("bench: write chaos report: %w", err)
		}
	}
	return filepath.Join(dir, stamp+".md"), nil
}
