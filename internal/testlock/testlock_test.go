package testlock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestExclusive: a second taker of the lock waits until the first
// releases it (flock locks are per open file, so two takers in one
// process exclude each other as two processes do).
func TestExclusive(t *testing.T) {
	name := "test-" + t.Name()
	release, err := Exclusive(name)
	require.NoError(t, err)
	got := make(chan func())
	go func() {
		r, err := Exclusive(name)
		if err != nil {
			r = func() {}
		}
		got <- r
	}()
	select {
	case <-got:
		t.Fatal("the lock was taken twice")
	case <-time.After(200 * time.Millisecond):
	}
	release()
	select {
	case r := <-got:
		r()
	case <-time.After(10 * time.Second):
		t.Fatal("the second taker never got the lock")
	}
}
