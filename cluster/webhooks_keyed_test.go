package cluster_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
)

// TestKeyedWebhookWritesExactlyOnce: in cluster mode a keyed webhook
// endpoint creation and a keyed secret rotation commit their
// Idempotency-Key record with the endpoint, in one atomic batch of the
// shared index (decisions §20, issue 31 item 3). Both are made through A
// with their answers lost (the crash hook drops the pipeline's store of
// them), then A is lost; retried through B with the same keys, each
// replays its first answer (the same endpoint, the same secret), and the
// unit has one endpoint, whose secret was rotated once. Before, the
// answer was stored after the write: the retry made a second endpoint and
// rotated the secret again.
func TestKeyedWebhookWritesExactlyOnce(t *testing.T) {
	t.Parallel() // see parallelTests
	lost := &apptest.Lost{}
	nodes := startNodes(t, 3, apptest.LoseAnswers("lost-", lost))
	a, b := nodes[0], nodes[1]
	rcv := httptest.NewServer(&hookSink{})
	t.Cleanup(rcv.Close)
	unit := newUnit(t, a, "Keyed hooks")
	base := "/admin/v1/business-units/" + unit + "/webhook-endpoints"
	body := map[string]any{"url": rcv.URL, "eventTypes": []string{"order.paid"}, "description": "keyed"}

	st, created, _ := doIdemRetry(t, a.URL+base, a.Admin, "lost-create", body)
	require.Equal(t, 201, st, "%v", created)
	id, secret := created["id"].(string), created["secret"].(string)
	rotate := base + "/" + id + "/rotate-secret"
	st, rotated, _ := doIdemRetry(t, a.URL+rotate, a.Admin, "lost-rotate", map[string]any{})
	require.Equal(t, 200, st, "%v", rotated)
	require.NotEqual(t, secret, rotated["secret"])
	require.Equal(t, []string{"lost-create", "lost-rotate"}, lost.Keys(), "the crash hook dropped both answers")

	// A, which served both, is lost; the records live on the majority.
	require.NoError(t, a.Main.Close())

	st, again, replayed := doIdemRetry(t, b.URL+base, b.Admin, "lost-create", body)
	require.Equal(t, 201, st, "%v", again)
	require.True(t, replayed, "the retried creation through %s wrote again: %v", b.name, again)
	require.Equal(t, created, again)
	st, again, replayed = doIdemRetry(t, b.URL+rotate, b.Admin, "lost-rotate", map[string]any{})
	require.Equal(t, 200, st, "%v", again)
	require.True(t, replayed, "the retried rotation through %s rotated again: %v", b.name, again)
	require.Equal(t, rotated, again)

	// One endpoint, listed on both survivors.
	for _, nd := range nodes[1:] {
		eventually(t, 10*time.Second, "one endpoint listed on "+nd.name, func() bool {
			st, l := do(t, "GET", nd.URL+base, nd.Admin, nil)
			data, _ := l["data"].([]any)
			return st == 200 && len(data) == 1 && data[0].(map[string]any)["id"] == id
		})
	}
}
