package app

import (
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestClusterSecrets: cluster mode refuses to start without the admin
// token (a generated one would differ per node), and the sandbox's
// webhook secret, unless set, is the same on every node of one admin token
// and another for another token; a single node keeps its own in the data
// dir, as before.
func TestClusterSecrets(t *testing.T) {
	node := func(token, peers string) *Main {
		cfg := DefaultConfig()
		cfg.Addr, cfg.DataDir, cfg.AdminToken, cfg.ClusterPeers = "127.0.0.1:0", t.TempDir(), token, peers
		cfg.NodeName, cfg.ClusterAddr = "n1", "127.0.0.1:6222"
		cfg.Logger = slog.New(slog.DiscardHandler)
		return NewMain(cfg, io.Discard)
	}
	peers := "127.0.0.1:6222,127.0.0.1:6223,127.0.0.1:6224"
	err := node("", peers).Open()
	require.ErrorContains(t, err, "TICKETD_ADMIN_TOKEN")

	const tok = "adm_cluster_secret_test_0123"
	s1, s2 := node(tok, peers).sandboxSecret(tok), node(tok, peers).sandboxSecret(tok)
	require.Equal(t, s1, s2, "one secret for the cluster")
	require.Regexp(t, `^whsec_[0-9a-f]{64}$`, s1)
	require.NotEqual(t, s1, node("adm_another_token_0123456", peers).sandboxSecret("adm_another_token_0123456"))
	require.NotContains(t, s1, tok)

	set := node(tok, peers)
	set.cfg.PaymentWebhookSecret = "whsec_set"
	require.Equal(t, "whsec_set", set.sandboxSecret(tok), "a set secret wins")
	require.Equal(t, "", node(tok, "").sandboxSecret(tok), "a single node keeps its own")
}
