package http

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The connection deadlines (conns/listener.go, lazyDeadline) through the real
// server: a silent connection, a trickling request and an idle kept-alive
// connection are let go in time, never early beyond the slack, and a
// client that keeps sending is never cut.

// TestReadTimeoutEndsATricklingRequest: a request whose bytes come one at
// a time is answered 408 about ReadTimeout after its first byte, however
// often bytes come.
func TestReadTimeoutEndsATricklingRequest(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ReadTimeout, c.IdleTimeout = 400*time.Millisecond, 5*time.Second })
	r := dialRaw(t, h)
	req := "GET /storefront/v1/events/evt_1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + pkLive + "\r\n"
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < len(req); i++ {
			if _, err := io.WriteString(r.c, req[i:i+1]); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	st, body := r.answer()
	took := time.Since(start)
	require.Equal(t, 408, st, body)
	require.GreaterOrEqual(t, took, 300*time.Millisecond, "not before ReadTimeout (less the slack)")
	require.Less(t, took, 3*time.Second, "the trickle did not hold the connection")
	_ = r.c.Close()
	<-done
}

// TestIdleTimeoutEndsAKeptAliveConnection: after an answer, a kept-alive
// connection that sends nothing is closed about IdleTimeout later, while
// one that keeps sending requests within the timeout is served on, long
// past it.
func TestIdleTimeoutEndsAKeptAliveConnection(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ReadTimeout, c.IdleTimeout = 300*time.Millisecond, 500*time.Millisecond })

	busy := dialRaw(t, h)
	until := time.Now().Add(1500 * time.Millisecond)
	n := 0
	for time.Now().Before(until) {
		busy.send("GET", "/nowhere", "", "") // answered without a key or a budget
		st, body := busy.answer()
		require.Equal(t, 404, st, "request %d: %s", n, body)
		n++
		time.Sleep(40 * time.Millisecond)
	}
	require.Greater(t, n, 10)

	idle := dialRaw(t, h)
	idle.send("GET", "/nowhere", "", "")
	st, _ := idle.answer()
	require.Equal(t, 404, st)
	start := time.Now()
	require.True(t, idle.closed(), "the idle connection was closed")
	took := time.Since(start)
	require.GreaterOrEqual(t, took, 400*time.Millisecond, "not before IdleTimeout (less the slack)")
	require.Less(t, took, 3*time.Second)
}
