package bench

import (
	"ticketd/bench/load"

	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary serve as the harness's child processes.
func TestMain(m *testing.M) {
	if role := os.Getenv(load.RoleEnv); role != "" {
		if err := load.RunRole(role, os.Args[1:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestQuickCorrectness runs the correctness parts of the quick mode, tiny
// and short, against the service composed as ticketd composes it (the test
// binary re-executed; building cmd/ticketd here would be slow): the drop
// with capacity above and below the buyers, the check-in burst with
// duplicates, kill -9 mid-drop, fsync off, and a queue drop. Every check
// must pass.
func TestQuickCorrectness(t *testing.T) {
	if testing.Short() {
		t.Skip("starts service processes")
	}
	self, err := os.Executable()
	require.NoError(t, err)
	cfg := QuickConfig()
	cfg.TicketdBin, cfg.SelfBin, cfg.TicketdRole = self, self, load.RoleService
	cfg.WorkDir = t.TempDir()
	cfg.Conns, cfg.Duration, cfg.OpenDuration = 16, time.Second, 500*time.Millisecond
	cfg.Levels = []float64{0.5}
	cfg.SoldOutCapacity, cfg.CheckinPool = 20, 500
	cfg.QueueBuyers, cfg.QueuePlaces = 500, 20
	cfg.Only = map[string]bool{"ceiling": true, "flash-sale": true, "sold-out": true, "queue-drop": true, "checkin-burst": true, "kill9": true, "nosync": true}
	var log strings.Builder
	cfg.Log = &log
	rep, err := Run(cfg)
	require.NoError(t, err)
	t.Log(log.String())
	require.NotEmpty(t, rep.Checks)
	names := map[string]bool{}
	for _, c := range rep.Checks {
		require.True(t, c.OK, "%s: %s: %s", c.Scenario, c.Name, c.Detail)
		names[c.Scenario+"/"+c.Name] = true
	}
	for _, want := range []string{
		"flash-sale/no oversell", "flash-sale/every 2xx hold present", "sold-out/exactly capacity sold",
		"checkin-burst/one check-in per registration and door", "kill9/every acknowledged order survived kill -9",
		"nosync/every 2xx hold present", "queue-drop/admission strictly in queue order", "queue-drop/the pre-queue order is a shuffle",
		"queue-drop/sold_out within 2 s of the last sale", "queue-drop/every waiter reads sold_out once sold out",
	} {
		require.True(t, names[want], "check %q did not run", want)
	}
	require.Greater(t, rep.CeilingRPS, 0.0)
	require.Greater(t, rep.Durability.NoSyncRPS, 0.0)
	// Every closed loop against a server process reports the CPU both
	// sides spent per request; the kill -9 drop has no figure, its server
	// is gone when the run ends; the queue drop's loops of a few hundred
	// requests end within the CPU clock's tick at this size.
	for _, x := range rep.Runs {
		if x.Mode == "closed" && x.Name != "kill9-drop" && !strings.HasPrefix(x.Name, "queue-drop") {
			require.Greater(t, x.ServerCPUUsPerRequest, 0.0, x.Name)
			require.Greater(t, x.ClientCPUUsPerRequest, 0.0, x.Name)
		}
	}
	require.Contains(t, rep.Markdown(""), "## CPU per request")
}
