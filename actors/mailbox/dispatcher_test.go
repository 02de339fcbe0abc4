package mailbox

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDispatcherReusesWorkers(t *testing.T) {
	d := NewDispatcher(10, 2)
	defer d.Close()
	var wg sync.WaitGroup
	for range 100 {
		wg.Add(1)
		d.Schedule(wg.Done)
		wg.Wait() // one run at a time: an idle worker takes each
	}
	assert.LessOrEqual(t, d.workers.Load(), int32(2))
	assert.Equal(t, 10, d.Throughput())
}

func TestDispatcherNeverWaitsForABusyWorker(t *testing.T) {
	d := NewDispatcher(10, 1)
	defer d.Close()
	block := make(chan struct{})
	started := make(chan struct{})
	d.Schedule(func() { close(started); <-block })
	<-started
	// The only worker is busy: the next run must still start at once.
	ran := make(chan struct{})
	d.Schedule(func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("a run waited for a busy worker")
	}
	close(block)
}

func TestDispatcherCloseEndsIdleWorkers(t *testing.T) {
	d := NewDispatcher(10, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		d.Schedule(func() { time.Sleep(10 * time.Millisecond); wg.Done() })
	}
	wg.Wait()
	d.Close()
	require.Eventually(t, func() bool { return d.workers.Load() == 0 }, 5*time.Second, time.Millisecond)
}
