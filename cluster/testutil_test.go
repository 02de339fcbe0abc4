package cluster

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// freeAddrs reserves n loopback ports for cluster routes.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	for _, ln := range lns {
		_ = ln.Close()
	}
	return out
}

// startCluster starts n nodes on loopback and waits until all are ready.
func startCluster(t *testing.T, n int) ([]*Node, []Config) {
	t.Helper()
	addrs := freeAddrs(t, n)
	nodes := make([]*Node, n)
	cfgs := make([]Config, n)
	for i := range n {
		cfgs[i] = Config{NodeName: fmt.Sprintf("n%d", i+1), Addr: addrs[i], Peers: addrs,
			DataDir: t.TempDir(), Shards: 3}
		nd, err := Start(cfgs[i])
		require.NoError(t, err)
		nodes[i] = nd
		t.Cleanup(func() { _ = nd.Close() })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, nd := range nodes {
		require.NoError(t, nd.WaitReady(ctx))
	}
	return nodes, cfgs
}
