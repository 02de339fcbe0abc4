package mail

import (
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/mail/smtptest"
	"ticketd/outbox"
	"ticketd/persistence"
)

// newRelay starts a real SMTP relay on loopback for the test.
func newRelay(t *testing.T) (*smtptest.Relay, string) {
	t.Helper()
	r, err := smtptest.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return r, r.Addr
}

// awaitDelivered waits for the addresses in want (in any order) and
// fails on any other.
func awaitDelivered(t *testing.T, r *smtptest.Relay, within time.Duration, want ...string) {
	t.Helper()
	left := map[string]bool{}
	for _, w := range want {
		left[w] = true
	}
	deadline := time.After(within)
	for len(left) > 0 {
		select {
		case msg := <-r.Delivered():
			for _, to := range msg.To {
				require.True(t, left[to], "unexpected delivery to %s", to)
				delete(left, to)
			}
		case <-deadline:
			t.Fatalf("not delivered within %s: %v", within, left)
		}
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func stateOf(t *testing.T, m *Mailer, to string) Entry {
	t.Helper()
	p, err := m.Pending("", MaxPending)
	require.NoError(t, err)
	for _, e := range p {
		if e.Email == to {
			return e
		}
	}
	return Entry{}
}

// TestRefusedRecipientsDoNotHoldUpTheRest: a relay answers 450 at RCPT
// for one domain and 550 for one address. The entries sorted first are
// the refused ones, yet every other mail goes out at once; the 450 one is
// retried with growing delays and goes out when the relay accepts it; the
// 550 one is parked, listed with its error, not tried again, and goes out
// after a retry request.
func TestRefusedRecipientsDoNotHoldUpTheRest(t *testing.T) {
	s := openStore(t)
	r, addr := newRelay(t)
	r.Greylist("greylist.example", true)
	r.Reject("nobody@example.com", true)
	const grey, gone = "ann@greylist.example", "nobody@example.com"
	owe(t, s, ticket(InboxPrefix+"evt_0/0000000000000001-0000", grey))
	owe(t, s, ticket(InboxPrefix+"evt_0/0000000000000001-0001", gone))
	var ok []string
	for i := range 6 {
		to := string(rune('a'+i)) + "@ok.example"
		owe(t, s, ticket(InboxPrefix+"evt_1/000000000000000"+string(rune('1'+i))+"-0000", to))
		ok = append(ok, to)
	}
	m, err := New(Config{SMTPAddr: addr, BatchMax: 3, BackoffMin: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond,
		RetryMin: 100 * time.Millisecond, RetryMax: 400 * time.Millisecond, Logger: discard()}, s)
	require.NoError(t, err)
	m.Start()
	t.Cleanup(func() { _ = m.Close() })

	start := time.Now()
	awaitDelivered(t, r, 5*time.Second, ok...)
	require.Less(t, time.Since(start), 2*time.Second, "the refused entries held up the rest")

	// The 550 one is parked with the relay's answer, and left alone.
	require.Eventually(t, func() bool { return stateOf(t, m, gone).State == outbox.Parked }, 5*time.Second, 10*time.Millisecond)
	parked := stateOf(t, m, gone)
	require.Contains(t, parked.LastError, "550")
	require.Equal(t, 1, parked.Attempts)
	require.False(t, parked.LastAttemptAt.IsZero())
	require.Equal(t, InboxPrefix+"evt_0/0000000000000001-0001", parked.Key)

	// The 450 one is retried, each time later than the last.
	require.Eventually(t, func() bool { return len(r.Tries(grey)) >= 4 }, 10*time.Second, 10*time.Millisecond)
	tries := r.Tries(grey)
	for i := 2; i < len(tries); i++ {
		require.GreaterOrEqual(t, tries[i].Sub(tries[i-1]), 45*time.Millisecond, "retried without backoff: %v", tries)
	}
	retrying := stateOf(t, m, grey)
	require.Equal(t, outbox.Retrying, retrying.State)
	require.GreaterOrEqual(t, retrying.Attempts, 3)
	require.Contains(t, retrying.LastError, "450")
	require.False(t, retrying.NextAttemptAt.IsZero())
	require.Len(t, r.Tries(gone), 1, "a parked entry is not tried again")

	// The relay accepts the domain now: the retry delivers it.
	r.Greylist("greylist.example", false)
	awaitDelivered(t, r, 5*time.Second, grey)

	// A retry request sends the parked one.
	_, err = m.Retry("evt_0/0000000000000001-0002")
	require.ErrorIs(t, err, outbox.ErrNotFound)
	_, err = m.Retry("evt_1/0000000000000001-0000")
	require.ErrorIs(t, err, outbox.ErrNotFound, "delivered")
	r.Reject(gone, false)
	e, err := m.Retry(parked.ID)
	require.NoError(t, err)
	require.Equal(t, outbox.Retrying, e.State)
	awaitDelivered(t, r, 5*time.Second, gone)
	waitPending(t, m, 0)
}

// TestRetryStateAndParkedMailSurviveARestart: the attempts, the next
// attempt time and the parking are durable; after a restart a retrying
// entry waits for its time and a parked one for a request.
func TestRetryStateAndParkedMailSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	open := func() *persistence.Store {
		st, err := persistence.Open(persistence.Options{Dir: dir, Logger: discard()})
		require.NoError(t, err)
		return st
	}
	r, addr := newRelay(t)
	r.Greylist("greylist.example", true)
	r.Reject("nobody@example.com", true)
	const grey, gone = "ann@greylist.example", "nobody@example.com"
	cfg := Config{SMTPAddr: addr, BackoffMin: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond,
		RetryMin: 2 * time.Second, RetryMax: 4 * time.Second, Logger: discard()}
	s := open()
	owe(t, s, ticket(InboxPrefix+"evt_0/0000000000000001-0000", grey))
	owe(t, s, ticket(InboxPrefix+"evt_0/0000000000000001-0001", gone))
	m, err := New(cfg, s)
	require.NoError(t, err)
	m.Start()
	require.Eventually(t, func() bool {
		return stateOf(t, m, grey).State == outbox.Retrying && stateOf(t, m, gone).State == outbox.Parked
	}, 5*time.Second, 10*time.Millisecond)
	before := map[string]Entry{grey: stateOf(t, m, grey), gone: stateOf(t, m, gone)}
	require.NoError(t, m.Close())
	require.NoError(t, s.Close())

	s = open()
	t.Cleanup(func() { _ = s.Close() })
	r.Greylist("greylist.example", false)
	r.Reject(gone, false)
	m, err = New(cfg, s)
	require.NoError(t, err)
	for _, to := range []string{grey, gone} {
		after := stateOf(t, m, to)
		require.Equal(t, before[to].State, after.State, to)
		require.Equal(t, before[to].Attempts, after.Attempts, to)
		require.Equal(t, before[to].LastError, after.LastError, to)
		require.True(t, before[to].NextAttemptAt.Equal(after.NextAttemptAt), to)
		require.Equal(t, before[to].PassURL, after.PassURL, to)
	}
	m.Start()
	t.Cleanup(func() { _ = m.Close() })
	// Not before its time: the restart does not reset the backoff.
	wait := time.Until(before[grey].NextAttemptAt)
	if wait > 300*time.Millisecond {
		time.Sleep(wait - 200*time.Millisecond)
		require.Len(t, r.Tries(grey), 1, "retried before its time after a restart")
	}
	awaitDelivered(t, r, 6*time.Second, grey)
	require.Len(t, r.Tries(gone), 1, "a parked entry waits for a request, restart or not")
	_, err = m.Retry(before[gone].ID)
	require.NoError(t, err)
	awaitDelivered(t, r, 5*time.Second, gone)
	waitPending(t, m, 0)
}

// TestRelayDownBacksOffTheSenderNotTheEntries: a relay that accepts TCP
// and hangs up at once is dialled with growing delays however often the
// mailer is woken, and no entry is charged for it.
func TestRelayDownBacksOffTheSenderNotTheEntries(t *testing.T) {
	s := openStore(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	var mu sync.Mutex
	dials := 0
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			dials++
			mu.Unlock()
			_ = c.Close()
		}
	}()
	owe(t, s, ticket(InboxPrefix+"evt_1/0000000000000001-0000", "ada@example.com"))
	m, err := New(Config{SMTPAddr: ln.Addr().String(), BackoffMin: 20 * time.Millisecond, BackoffMax: 100 * time.Millisecond,
		SendTimeout: time.Second, Logger: discard()}, s)
	require.NoError(t, err)
	m.Start()
	t.Cleanup(func() { _ = m.Close() })
	stop := time.Now().Add(600 * time.Millisecond)
	for time.Now().Before(stop) {
		m.Wake() // as every order would
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	n := dials
	mu.Unlock()
	// 20, 40, 80, then every 50-100 ms: about 8 in 600 ms, never hundreds.
	require.GreaterOrEqual(t, n, 3)
	require.LessOrEqual(t, n, 16, "the sender spins on a dead relay")
	e := stateOf(t, m, "ada@example.com")
	require.Equal(t, outbox.Pending, e.State)
	require.Zero(t, e.Attempts, "a dead relay is not the entry's fault")
}

// TestCloseDoesNotWaitForAStalledRelay: a relay that stops answering in
// the middle of a transaction does not hold up Close, and the mail it
// never accepted stays owed, uncharged.
func TestCloseDoesNotWaitForAStalledRelay(t *testing.T) {
	s := openStore(t)
	r, addr := newRelay(t)
	r.Stall(true)
	owe(t, s, ticket(InboxPrefix+"evt_1/0000000000000001-0000", "ada@example.com"))
	m, err := New(Config{SMTPAddr: addr, SendTimeout: 20 * time.Second, Logger: discard()}, s)
	require.NoError(t, err)
	m.Start()
	time.Sleep(300 * time.Millisecond) // the round is stuck at RCPT by now
	start := time.Now()
	require.NoError(t, m.Close())
	require.Less(t, time.Since(start), 2*time.Second, "Close waited for the relay")
	e := stateOf(t, m, "ada@example.com")
	require.Equal(t, outbox.Pending, e.State)
	require.Zero(t, e.Attempts)
}
