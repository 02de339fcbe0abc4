package conns

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLazyDeadlineArmsOnlyWhenItMoved: a deadline is armed when it is
// earlier than the armed one, or none, or later by more than the slack;
// one a little later keeps the armed one.
func TestLazyDeadlineArmsOnlyWhenItMoved(t *testing.T) {
	var d lazyDeadline
	var set []time.Time
	arm := func(t time.Time) error { set = append(set, t); return nil }
	now := time.Now()

	d.want(now.Add(60 * time.Second))
	d.arm(arm)
	require.Len(t, set, 1, "nothing armed yet")

	d.want(now.Add(60*time.Second + 5*time.Millisecond))
	d.arm(arm)
	require.Len(t, set, 1, "a few ms later: the armed one stands")

	d.want(now.Add(15 * time.Second))
	d.arm(arm)
	require.Len(t, set, 2, "earlier: armed")
	require.Equal(t, now.Add(15*time.Second), set[1])

	d.want(now.Add(60 * time.Second))
	d.arm(arm)
	require.Len(t, set, 3, "much later: armed")

	d.want(time.Time{})
	d.arm(arm)
	require.Len(t, set, 4, "none: cleared")
	require.True(t, set[3].IsZero())
	d.want(time.Time{})
	d.arm(arm)
	require.Len(t, set, 4, "still none")

	d.want(now.Add(time.Second))
	require.Len(t, set, 4, "set, not armed until the next read or write")
	d.arm(arm)
	require.Len(t, set, 5)
}
