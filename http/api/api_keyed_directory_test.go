package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
)

// TestAPIKeyedDirectoryWritesLostAnswersReplayed: on a single node, a
// keyed business unit creation, API key creation and revocation, door
// device creation and revocation each commit their Idempotency-Key record
// in the directory's batch: with every answer lost (the crash hook drops
// the pipeline's store of it, as a kill -9 between the write and the
// answer would) and the service restarted, each retry with the same key
// replays the first answer, and each write was made once: one unit, one
// key, one device (issue 31 item 3; decisions §20). Before, a device's
// write committed no record: its retry made a second device.
func TestAPIKeyedDirectoryWritesLostAnswersReplayed(t *testing.T) {
	t.Parallel()
	lost := &apptest.Lost{}
	f := newAPIFx(t, apptest.LoseAnswers("lost-", lost))
	u := f.unit(t)
	ev := apiPublished(t, u.dev)
	name := "Lost unit " + t.Name()

	type write struct {
		key, path string
		body      any
		status    int
		dev       bool // with the unit's secret key, else the admin token
	}
	do := func(w write) *apiResp {
		c := f.admin(t)
		if w.dev {
			c = u.dev
		}
		return c.WithHeader("Idempotency-Key", w.key).Do("POST", w.path, w.body)
	}
	first := map[string]*apiResp{}
	run := func(w write) map[string]any {
		t.Helper()
		r := do(w)
		require.Equal(t, w.status, r.Status, "%s: %s", w.key, r.Body)
		require.Contains(t, lost.Keys(), w.key, "the crash hook dropped the answer")
		first[w.key] = r
		return apiWant(t, r, w.status)
	}

	unitW := write{key: "lost-unit", path: "/admin/v1/business-units", body: map[string]any{"name": name}, status: 201}
	unit := run(unitW)
	keyW := write{key: "lost-key", path: "/admin/v1/business-units/" + u.ID + "/api-keys",
		body: map[string]any{"type": "secret", "name": "lost"}, status: 201}
	key := run(keyW)
	revokeW := write{key: "lost-revoke", path: "/admin/v1/api-keys/" + apiS(key, "id") + "/revoke", status: 200}
	run(revokeW)
	devW := write{key: "lost-device", path: "/v1/events/" + ev + "/devices", body: map[string]any{"name": "Lost gate"}, status: 201, dev: true}
	dev := run(devW)
	devRevokeW := write{key: "lost-device-revoke", path: "/v1/events/" + ev + "/devices/" + apiS(dev, "id") + "/revoke", status: 200, dev: true}
	run(devRevokeW)

	f.s.Restart()
	u.dev = newAPIClient(t, f.s.URL).WithKey(u.Secret)
	for _, w := range []write{unitW, keyW, revokeW, devW, devRevokeW} {
		again := do(w)
		require.Equal(t, w.status, again.Status, "%s: %s", w.key, again.Body)
		require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"), "%s was run again: %s", w.key, again.Body)
		require.JSONEq(t, string(first[w.key].Body), string(again.Body), w.key)
	}

	// Each write was made once.
	n := 0
	for _, bu := range apiData(t, apiWant(t, f.admin(t).Do("GET", "/admin/v1/business-units?limit=100", nil), 200)) {
		if bu["name"] == name {
			n++
			require.Equal(t, unit["id"], bu["id"])
		}
	}
	require.Equal(t, 1, n, "business units named %q", name)
	n = 0
	for _, k := range apiData(t, apiWant(t, f.admin(t).Do("GET", "/admin/v1/business-units/"+u.ID+"/api-keys?limit=100", nil), 200)) {
		if k["name"] == "lost" {
			n++
			require.Equal(t, key["id"], k["id"])
			require.NotNil(t, k["revokedAt"])
		}
	}
	require.Equal(t, 1, n, "API keys named lost")
	devs := apiData(t, apiWant(t, u.dev.Do("GET", "/v1/events/"+ev+"/devices", nil), 200))
	require.Len(t, devs, 1, "devices")
	require.Equal(t, dev["id"], devs[0]["id"])
	require.Equal(t, "revoked", devs[0]["status"])
}
