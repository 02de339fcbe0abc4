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
