// Package testaddr reserves loopback addresses for tests whose listeners
// must be known before they start.
package testaddr

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"testing"
)

// Free reserves n loopback addresses for listeners that must be
// known before they start (a cluster's routes name every peer). The ports
// lie below the kernel's ephemeral range, which the outgoing connections
// of every test draw their local ports from: a port picked with
// "127.0.0.1:0" and released comes from that range, and an outgoing
// connection could take it before the server bound it (CI: "server not
// accepting connections after 10s", the route listener refused).
func Free(t testing.TB, n int) []string {
	t.Helper()
	lo, hi := 10_000, ephemeralStart()
	var out []string
	seen := map[int]bool{}
	for tries := 0; len(out) < n; tries++ {
		if tries > 1000 {
			t.Fatalf("testaddr: no free port in [%d, %d)", lo, hi)
		}
		port := lo + rand.IntN(hi-lo)
		if seen[port] {
			continue
		}
		seen[port] = true
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // in use
		}
		out = append(out, ln.Addr().String())
		_ = ln.Close()
	}
	return out
}

// ephemeralStart is where the kernel's ephemeral ports begin (Linux's
// default when unreadable).
func ephemeralStart() int {
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var a, z int
		if _, err := fmt.Sscan(string(b), &a, &z); err == nil && a > 11_000 {
			lo = a
		}
	}
	return lo
}
