package conns

import (
	"log/slog"
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReclaimTakesFromTheBusiestAddress: at the bound, the idle connections
// of the address holding the most go first (the longest idle of them), so
// a flood from one address does not cost an ordinary visitor its
// kept-alive connection, even one idle longer.
func TestReclaimTakesFromTheBusiestAddress(t *testing.T) {
	l := New(nil, Config{Max: 3, Log: slog.New(slog.DiscardHandler)})
	add := func(ip string, idleSince int64) *trackedConn {
		a, b := net.Pipe()
		t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
		c := &trackedConn{Conn: a, l: l, ip: netip.MustParseAddr(ip), counted: true}
		c.idleSince.Store(idleSince)
		l.conns[c] = struct{}{}
		l.perIP[c.ip]++
		return c
	}
	visitor := add("127.0.0.1", 1) // idle the longest
	newer := add("127.0.0.2", 5)
	older := add("127.0.0.2", 3)
	reclaim := func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.reclaimLocked()
	}
	require.True(t, reclaim())
	require.True(t, older.reclaimed.Load(), "the flooding address's longest idle goes first")
	require.False(t, visitor.reclaimed.Load())
	require.True(t, reclaim())
	require.True(t, newer.reclaimed.Load())
	require.False(t, visitor.reclaimed.Load(), "the visitor keeps its connection while the flood has some")
	require.True(t, reclaim())
	require.True(t, visitor.reclaimed.Load())
	require.False(t, reclaim(), "nothing idle is left")
}

// TestPeer: a connection the listener admits answers its client's
// address as read at accept; any other connection answers nothing.
func TestPeer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := New(ln, Config{Max: 10, MaxPerIP: 10})
	defer l.Close()
	dialed := make(chan net.Conn, 1)
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Error(err)
			close(dialed)
			return
		}
		dialed <- c
	}()
	c, err := l.Accept()
	require.NoError(t, err)
	defer c.Close()
	client := <-dialed
	require.NotNil(t, client)
	defer client.Close()
	peer, ok := Peer(c)
	require.True(t, ok)
	require.Equal(t, netip.MustParseAddrPort(client.LocalAddr().String()).Addr(), peer)
	_, ok = Peer(client)
	require.False(t, ok, "not a connection of a Listener")
}
