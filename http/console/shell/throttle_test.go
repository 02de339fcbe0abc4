package shell

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestThrottleDelaysAndEviction: free failures cost nothing, then the
// wait doubles up to the cap; a full table evicts the keys with fewest
// failures, so a flood of one-failure keys neither refuses a newcomer nor
// frees the account under attack; IPv6 counts per /64.
func TestThrottleDelaysAndEviction(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	th := newThrottle(3, 8*time.Second, time.Hour, 100)
	for i := 0; i < 3; i++ {
		assert.Zero(t, th.wait("acct", t0))
		th.fail("acct", t0)
	}
	assert.Equal(t, time.Second, th.wait("acct", t0))
	var waits []time.Duration
	at := t0
	for i := 0; i < 5; i++ {
		at = at.Add(th.wait("acct", at))
		th.fail("acct", at)
		waits = append(waits, th.wait("acct", at))
	}
	assert.Equal(t, []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second, 8 * time.Second}, waits)
	assert.Zero(t, th.wait("acct", at.Add(time.Hour)), "forgotten an hour after the last failure")

	th = newThrottle(3, time.Minute, time.Hour, 100)
	for i := 0; i < 6; i++ {
		th.fail("victim", t0)
	}
	for i := 0; i < 10_000; i++ {
		th.fail(fmt.Sprintf("random-%d@example.com", i), t0.Add(time.Duration(i)*time.Millisecond))
	}
	assert.Equal(t, 100, th.size(), "bounded")
	assert.NotZero(t, th.wait("victim", t0.Add(time.Second)), "the account under attack kept its count")
	assert.Zero(t, th.wait("newcomer@example.com", t0.Add(11*time.Second)), "newcomers are never refused")

	a := netip.MustParseAddr("2001:db8:1:2:aaaa::1")
	b := netip.MustParseAddr("2001:db8:1:2:bbbb::9")
	c := netip.MustParseAddr("2001:db8:1:3::1")
	assert.Equal(t, addrKey(a), addrKey(b), "one /64")
	assert.NotEqual(t, addrKey(a), addrKey(c))
	assert.Equal(t, "ip:127.0.0.9", addrKey(netip.MustParseAddr("::ffff:127.0.0.9")))
}
