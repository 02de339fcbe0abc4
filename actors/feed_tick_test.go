package actors

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFeedTick: a long poll lingers until the next tick of FeedLinger,
// shared by every follower: within FeedLinger of its arrival, never at
// it, and followers arriving within one tick end their lingering at the
// same instant (so one answer serves them all).
func TestFeedTick(t *testing.T) {
	base := time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC)
	for _, d := range []time.Duration{0, time.Millisecond, 37 * time.Millisecond, FeedLinger - time.Nanosecond, FeedLinger, 5*FeedLinger + 3*time.Millisecond} {
		now := base.Add(d)
		ready := feedTick(now)
		require.True(t, ready.After(now), "%s", d)
		require.LessOrEqual(t, ready.Sub(now), FeedLinger, "%s", d)
		require.Zero(t, ready.Sub(base)%FeedLinger, "%s: on a tick", d)
	}
	require.Equal(t, feedTick(base.Add(time.Millisecond)), feedTick(base.Add(FeedLinger-time.Millisecond)), "one tick for both")
}
