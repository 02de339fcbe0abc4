package cluster_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/actors"
	"ticketd/event"
)

// TestDirectoryCannotTell: a node that cannot read the directory's log
// (the two others lost: no majority) never answers a false 401 for a key
// it does not know, which may have been made elsewhere, and stops
// accepting a key it knows, which may have been revoked elsewhere, within
// actors.DirectoryStaleAfter plus one read's wait: both are answered 503
// DIRECTORY_UNAVAILABLE (retryable), never 401 or 200 on a guess.
func TestDirectoryCannotTell(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes := startNodes(t, 3)
	a, b, c := nodes[0], nodes[1], nodes[2]
	unit := newUnit(t, a, "Shared")
	_, secret := newKey(t, a, unit)
	st, l := retry503(t, func() (int, map[string]any) { return do(t, "GET", c.URL+"/v1/events", secret, nil) })
	require.Equal(t, 200, st, "key made on %s, used on %s: %v", a.name, c.name, l)

	require.NoError(t, a.Main.Close())
	require.NoError(t, b.Main.Close())
	lost := time.Now()
	// A token C never saw: C cannot tell whether A made it just before it
	// was lost. (While C still leads the directory's stream it reads its
	// own copy, which no write can have passed without it: a 401 then is
	// true.)
	unavailable := func(token string, live bool) func() bool {
		return func() bool {
			st, m := do(t, "GET", c.URL+"/v1/events", token, nil)
			require.False(t, live && st == 401, "a live key refused on %s: %v", c.name, m)
			e, _ := m["error"].(map[string]any)
			return st == 503 && e["reason"] == event.ReasonDirectoryUnavailable
		}
	}
	bound := actors.DirectoryStaleAfter + 30*time.Second // + the stream leader's step-down without a quorum
	eventually(t, bound, c.name+" without a majority answers 503 for an unknown key", unavailable("sk_never_made_anywhere", false))
	// The key C knows: its view is too old to show a revocation by now.
	eventually(t, bound, c.name+" without a majority stops accepting a known key", unavailable(secret, true))
	t.Logf("%s answered 503 for its known key %s after the others were lost", c.name, time.Since(lost).Round(time.Millisecond))
}

// TestKeyAcrossDirectoryElection: a key made on A authenticates on B and
// C at once even while the directory's stream elects a new leader. During
// the election every read of the log fails, at once with JetStream's
// 10008 "temporarily unavailable" or by a timeout (measured: 20 of 20
// reads right after a step-down), and the read a node makes for a key it
// does not know used to end in a 401; now it is tried again for up to 5 s
// and the answer is 200, or 503 DIRECTORY_UNAVAILABLE (retried here, as
// the contract tells clients), never 401. Likewise a business unit made
// on A is found through C at once (a key made for it there), never a
// false 404.
func TestKeyAcrossDirectoryElection(t *testing.T) {
	t.Parallel() // see parallelTests
	nodes := startNodes(t, 3)
	a, b, c := nodes[0], nodes[1], nodes[2]
	unit := newUnit(t, a, "Shared")
	for round := range 5 {
		_, secret := newKey(t, a, unit)
		u2 := newUnit(t, a, fmt.Sprint("Round ", round))
		_, err := a.Main.Node().Conn().Request("$JS.API.STREAM.LEADER.STEPDOWN.TICKETD_DIR", nil, 5*time.Second)
		if err != nil {
			t.Logf("round %d: step-down: %v", round, err)
		}
		for _, nd := range []*node{b, c} {
			st, l := retry503(t, func() (int, map[string]any) { return do(t, "GET", nd.URL+"/v1/events", secret, nil) })
			require.Equal(t, 200, st, "round %d: key made on %s, used on %s while the directory elects a leader: %v", round, a.name, nd.name, l)
		}
		// A unit made on A is found through C as at once: a key for it.
		st, k := retry503(t, func() (int, map[string]any) {
			return do(t, "POST", c.URL+"/admin/v1/business-units/"+u2+"/api-keys", c.Admin, map[string]any{"type": "secret"})
		})
		require.Equal(t, 201, st, "round %d: unit made on %s, a key for it made through %s: %v", round, a.name, c.name, k)
	}
}
