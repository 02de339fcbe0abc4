package node

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// A cluster address in use fails the start at once, saying so, rather
// than after the server's whole wait to accept connections.
func TestStartRefusesAClusterAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", freeAddrs(t, 1)[0])
	require.NoError(t, err)
	defer ln.Close()
	addr := ln.Addr().String()
	_, err = Start(Config{NodeName: "n1", Addr: addr, Peers: []string{addr}, DataDir: t.TempDir(), Shards: 3,
		Logger: failLog(t)})
	require.ErrorContains(t, err, "cluster address "+addr)
}
