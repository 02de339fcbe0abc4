package bench

import (
	"ticketd/bench/load"

	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFeedFollow runs the feed-follow scenario tiny against the service
// composed in the test binary: 20 followers long-poll the drop's event
// feed, every one must see every change once, in order, and the drops
// must keep every acknowledged order.
func TestFeedFollow(t *testing.T) {
	if testing.Short() {
		t.Skip("starts service processes")
	}
	self, err := os.Executable()
	require.NoError(t, err)
	cfg := QuickConfig()
	cfg.TicketdBin, cfg.SelfBin, cfg.TicketdRole = self, self, load.RoleService
	cfg.WorkDir = t.TempDir()
	cfg.Conns, cfg.Duration = 8, time.Second
	cfg.Only = map[string]bool{"feed-follow": true}
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
	for _, want := range []string{"feed-follow/every follower saw every change once, in order", "feed-follow/every 2xx hold present"} {
		require.True(t, names[want], "check %q did not run", want)
	}
	x := rep.FeedFollow
	require.NotNil(t, x)
	require.True(t, x.ExactlyOnce, x.Problem)
	require.Greater(t, x.Changes, int64(0))
	require.Greater(t, x.AloneRPS, 0.0)
	require.Greater(t, x.LagP99Ms, 0.0)
	require.Contains(t, rep.Markdown(""), "## Feed followers")
}
