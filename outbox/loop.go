package outbox

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// Defaults of LoopConfig.
const (
	DefaultBackoffMin = time.Second
	DefaultBackoffMax = 5 * time.Minute
)

// Backoff is the delay after the n-th consecutive failure (n >= 1): lo
// doubling up to hi, then drawn from [d/2, d] so that senders that failed
// together do not retry together.
func Backoff(n int, lo, hi time.Duration) time.Duration {
	lo = max(lo, time.Millisecond)
	hi = max(hi, lo)
	d := lo
	for i := 1; i < n && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	half := d / 2
	return half + rand.N(half+1)
}

// LoopConfig configures a Loop.
type LoopConfig struct {
	// Name prefixes the loop's log lines ("mail", "webhooks").
	Name string
	// Logger receives the failures of whole rounds (default: discarded).
	Logger *slog.Logger
	// BackoffMin and BackoffMax bound the delay after a round that failed
	// as a whole (the relay is down): BackoffMin doubling up to
	// BackoffMax, jittered.
	BackoffMin time.Duration
	BackoffMax time.Duration
	// Poll, if positive, runs a round at least this often even when
	// nothing woke the loop.
	Poll time.Duration
	// Now is the clock that Round.Next is read against (default time.Now).
	Now func() time.Time
}

// Validate reports a configuration that cannot work.
func (c LoopConfig) Validate() error {
	if c.BackoffMin > c.BackoffMax && c.BackoffMax > 0 {
		return errors.New("outbox: backoff min above max")
	}
	return nil
}

func (c *LoopConfig) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.BackoffMin <= 0 {
		c.BackoffMin = DefaultBackoffMin
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = max(DefaultBackoffMax, c.BackoffMin)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Round is what one round of a sender reports to its Loop.
type Round struct {
	// More says the round made progress and stopped at a limit: the next
	// round starts at once. A round that made no progress must not set it,
	// or the loop would spin.
	More bool
	// Next is when the earliest scheduled entry comes due (zero: none);
	// the loop sleeps until then unless woken earlier.
	Next time.Time
}

// RoundFunc does one round of delivery. ctx ends when the loop is closed.
// An error means the round failed as a whole (the relay is unreachable):
// the loop backs off before the next round, and wakes do not cut the
// backoff short.
type RoundFunc func(ctx context.Context) (Round, error)

// Loop is the one sender skeleton: a goroutine that runs rounds when
// woken, when scheduled work comes due, on a poll tick, and after a
// backoff when a round fails. See the package documentation.
type Loop struct {
	cfg   LoopConfig
	round RoundFunc

	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	state  int // 0 new, 1 running, 2 closed
}

// NewLoop returns a loop that runs round; Start it.
func NewLoop(cfg LoopConfig, round RoundFunc) (*Loop, error) {
	if round == nil {
		return nil, errors.New("outbox: no round function")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Loop{cfg: cfg, round: round, ctx: ctx, cancel: cancel,
		wake: make(chan struct{}, 1), done: make(chan struct{})}, nil
}

// Start starts the goroutine; its first round runs at once (what an
// earlier run left behind). Start after Close does nothing.
func (l *Loop) Start() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != 0 {
		return
	}
	l.state = 1
	l.Wake()
	go l.run()
}

// Close cancels the round in flight (its ctx ends) and waits for the
// goroutine. Undelivered entries stay queued.
func (l *Loop) Close() error {
	l.mu.Lock()
	started := l.state == 1
	l.state = 2
	l.mu.Unlock()
	l.cancel()
	if started {
		<-l.done
	}
	return nil
}

// Wake asks for a round soon. It never blocks, so an actor may call it.
func (l *Loop) Wake() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Context ends when the loop is closed; work a round hands to other
// goroutines should stop with it.
func (l *Loop) Context() context.Context { return l.ctx }

func (l *Loop) run() {
	defer close(l.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var poll <-chan time.Time
	if l.cfg.Poll > 0 {
		t := time.NewTicker(l.cfg.Poll)
		defer t.Stop()
		poll = t.C
	}
	failures := 0
	for {
		wake := l.wake
		if failures > 0 {
			wake = nil // backing off: only the timer ends it
		}
		select {
		case <-l.ctx.Done():
			return
		case <-wake:
		case <-poll:
			if failures > 0 {
				continue
			}
		case <-timer.C:
		}
		timer.Stop()
		res, err := l.round(l.ctx)
		if l.ctx.Err() != nil {
			return
		}
		if err != nil {
			failures++
			d := Backoff(failures, l.cfg.BackoffMin, l.cfg.BackoffMax)
			l.cfg.Logger.Warn(l.cfg.Name+": round failed; backing off", "err", err, "in", d.Round(time.Millisecond))
			timer.Reset(d)
			continue
		}
		failures = 0
		switch {
		case res.More:
			l.Wake()
		case !res.Next.IsZero():
			timer.Reset(max(res.Next.Sub(l.cfg.Now()), time.Millisecond))
		}
	}
}
