package bench

import (
	"ticketd/bench/load"

	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConsoleDashboards runs the console-dashboards scenario tiny against
// the service composed in the test binary: the operator's sign-ins go
// through the real sign-in form, every poll must answer the live
// fragment, and the drops beside the dashboards must keep every
// acknowledged order.
func TestConsoleDashboards(t *testing.T) {
	if testing.Short() {
		t.Skip("starts service processes")
	}
	self, err := os.Executable()
	require.NoError(t, err)
	cfg := QuickConfig()
	cfg.TicketdBin, cfg.SelfBin, cfg.TicketdRole = self, self, load.RoleService
	cfg.WorkDir = t.TempDir()
	cfg.Conns, cfg.Duration = 8, time.Second
	cfg.Only = map[string]bool{"console-dashboards": true}
	var log strings.Builder
	cfg.Log = &log
	rep, err := Run(cfg)
	require.NoError(t, err)
	t.Log(log.String())
	names := map[string]bool{}
	for _, c := range rep.Checks {
		require.True(t, c.OK, "%s: %s: %s", c.Scenario, c.Name, c.Detail)
		names[c.Scenario+"/"+c.Name] = true
	}
	for _, want := range []string{"console-dashboards/every dashboard poll answered its fragment", "console-dashboards/every 2xx hold present"} {
		require.True(t, names[want], "check %q did not run", want)
	}
	d := rep.Dashboards
	require.NotNil(t, d)
	// Two rounds of a second each: every dashboard's first poll falls
	// within its interval, so 20 dashboards at 1 s poll at least 20 times
	// a round.
	require.GreaterOrEqual(t, d.Polls, int64(2*Dashboards))
	require.Greater(t, d.AloneRPS, 0.0)
	require.Greater(t, d.Ratio, 0.0)
	require.Greater(t, d.PollCPUUs, 0.0)
	require.Contains(t, rep.Markdown(""), "## Console dashboards")
	require.Len(t, rep.Targets, 1)
}
