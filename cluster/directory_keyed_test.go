package cluster_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
)

// TestKeyedDirectoryWritesExactlyOnce: in cluster mode a keyed business
// unit creation, API key creation and revocation, door device creation
// and revocation append their Idempotency-Key record with the directory's
// change, in one atomic batch of the shared directory stream (decisions
// §20, issue 31 item 3). Each is made through A with its answer lost (the
// crash hook drops the pipeline's store of it), then A is lost; retried
// through B with the same keys, each replays its first answer, and each
// write was made once: one unit, one key (revoked), one device (revoked).
// Before, the answer was stored after the write: the retries made a
// second unit, a second key and a second device.
func TestKeyedDirectoryWritesExactlyOnce(t *testing.T) {
	t.Parallel() // see parallelTests
	lost := &apptest.Lost{}
	nodes := startNodes(t, 3, apptest.LoseAnswers("lost-", lost))
	a, b := nodes[0], nodes[1]
	home := newUnit(t, a, "Keyed directory home")
	_, secret := newKey(t, a, home)
	evt, _ := sellableEvent(t, a, secret, "Keyed devices", 10)
	name := "Keyed directory " + t.Name()

	type write struct {
		key, path, token string
		body             any
		status           int
	}
	first := map[string]map[string]any{}
	run := func(w write) map[string]any {
		t.Helper()
		st, m, _ := doIdemRetry(t, a.URL+w.path, w.token, w.key, w.body)
		require.Equal(t, w.status, st, "%s: %v", w.key, m)
		require.Contains(t, lost.Keys(), w.key, "the crash hook dropped the answer")
		first[w.key] = m
		return m
	}
	unitW := write{key: "lost-unit", path: "/admin/v1/business-units", token: a.Admin, body: map[string]any{"name": name}, status: 201}
	unit := run(unitW)
	keyW := write{key: "lost-key", path: "/admin/v1/business-units/" + unit["id"].(string) + "/api-keys", token: a.Admin,
		body: map[string]any{"type": "secret", "name": "lost"}, status: 201}
	key := run(keyW)
	revokeW := write{key: "lost-revoke", path: "/admin/v1/api-keys/" + key["id"].(string) + "/revoke", token: a.Admin, body: map[string]any{}, status: 200}
	run(revokeW)
	devW := write{key: "lost-device", path: "/v1/events/" + evt + "/devices", token: secret, body: map[string]any{"name": "Lost gate"}, status: 201}
	dev := run(devW)
	devRevokeW := write{key: "lost-device-revoke", path: "/v1/events/" + evt + "/devices/" + dev["id"].(string) + "/revoke", token: secret,
		body: map[string]any{}, status: 200}
	run(devRevokeW)

	// A, which made every write, is lost; the records live on the majority.
	require.NoError(t, a.Main.Close())

	for _, w := range []write{unitW, keyW, revokeW, devW, devRevokeW} {
		st, again, replayed := doIdemRetry(t, b.URL+w.path, w.token, w.key, w.body)
		require.Equal(t, w.status, st, "%s: %v", w.key, again)
		require.True(t, replayed, "the retried %s through %s wrote again: %v", w.key, b.name, again)
		require.Equal(t, first[w.key], again, w.key)
	}

	// Each write was made once, as every survivor lists.
	for _, nd := range nodes[1:] {
		eventually(t, 10*time.Second, "one of each on "+nd.name, func() bool {
			units := 0
			for _, u := range nd.Sys.Directory().Units() {
				if u.Name == name {
					units++
				}
			}
			keys := nd.Sys.Directory().Keys(unit["id"].(string))
			devs := nd.Sys.Directory().Devices(evt)
			return units == 1 && len(keys) == 1 && keys[0].RevokedAt != nil &&
				len(devs) == 1 && devs[0].ID == dev["id"] && devs[0].RevokedAt != nil
		})
	}
}
