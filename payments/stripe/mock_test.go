package stripe

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"ticketd/payments/stripe/stripemock"
)

// The tests call a real stripe-mock (Stripe's own mock API server), started
// once for the package on loopback ports, through a recording proxy: stripe-
// mock is stateless and answers canned objects, so what was sent (lines,
// amounts, references, idempotency keys) is asserted on the proxy's record.

func TestMain(m *testing.M) {
	code := m.Run()
	stripemock.Stop()
	os.Exit(code)
}

const (
	testKey           = "sk_test_51TicketdTestKeyDoNotLeak0123456789"
	testWebhookSecret = "whsec_TicketdTestWebhookSecretDoNotLeak"
)

// newTestProvider is a Provider calling stripe-mock through a recorder, its
// stripe-go log lines in the answered buffer.
func newTestProvider(t *testing.T, edit ...func(*Config)) (*Provider, *stripemock.Recorder, *syncBuffer) {
	t.Helper()
	rec := stripemock.NewRecorder(t, stripemock.Start(t))
	logs := &syncBuffer{}
	cfg := Config{
		SecretKey: testKey, WebhookSecret: testWebhookSecret, APIBase: rec.URL,
		RequestTimeout: 5 * time.Second, MaxNetworkRetries: 2,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, e := range edit {
		e(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, rec, logs
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
