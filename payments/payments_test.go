package payments

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var now = time.Unix(1_800_000_000, 0)

func TestSignAndVerify(t *testing.T) {
	s := NewSandbox("whsec_test", "http://x", "http://x/webhooks/payments/sandbox")
	body := Body("whd_1", Succeeded, Payment{ID: "pay_a.b", OrderNumber: "A-1", Amount: "49.99", Currency: "USD"})
	sig := s.Sign(now, body)
	assert.NoError(t, s.Verify(sig, body, now))
	assert.NoError(t, s.Verify(sig, body, now.Add(Tolerance)), "at the edge of the tolerance")

	assert.ErrorIs(t, s.Verify("", body, now), ErrNoSignature)
	assert.ErrorIs(t, s.Verify(sig, append(body, ' '), now), ErrBadSignature, "body changed")
	assert.ErrorIs(t, s.Verify(sig, body, now.Add(Tolerance+time.Second)), ErrStale)
	assert.ErrorIs(t, s.Verify(sig, body, now.Add(-Tolerance-time.Second)), ErrStale, "from the future")
	other := NewSandbox("whsec_other", "http://x", "")
	assert.ErrorIs(t, s.Verify(other.Sign(now, body), body, now), ErrBadSignature, "forged with another secret")
	for _, h := range []string{"t=abc,v1=00", "v1=00", "t=1", "garbage", "t=1800000000,v1=zz"} {
		assert.ErrorIs(t, s.Verify(h, body, now), ErrBadSignature, h)
	}
	rotated := "t=1800000000,v1=" + "00" + ",v1=" + sig[len("t=1800000000,v1="):]
	assert.NoError(t, s.Verify(rotated, body, now), "one matching v1 of several is enough")

	w, err := ParseWebhook(body)
	require.NoError(t, err)
	assert.Equal(t, "pay_a.b", w.Data.PaymentID)
	assert.Equal(t, "49.99", w.Data.Amount.String())
	for _, bad := range []string{`{}`, `{"id":"x","type":"payment.weird","data":{"paymentId":"p","amount":1,"currency":"USD"}}`,
		`{"id":"x","type":"payment.failed","data":{"paymentId":"p","amount":1,"currency":"USD"},"extra":1}`, `nope`} {
		_, err := ParseWebhook([]byte(bad))
		assert.Error(t, err, bad)
	}
}

func TestDeliverPostsASignedWebhook(t *testing.T) {
	var got *http.Request
	var gotBody []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		gotBody, _ = io.ReadAll(r.Body)
		w.WriteHeader(200)
	}))
	defer srv.Close()
	s := NewSandbox("whsec_test", srv.URL, srv.URL+"/webhooks/payments/sandbox")
	id, err := s.Deliver(context.Background(), Failed, Payment{ID: "pay_x.y", OrderNumber: "X-1", Amount: "10", Currency: "EUR"}, time.Now())
	require.NoError(t, err)
	assert.Equal(t, "/webhooks/payments/sandbox", got.URL.Path)
	assert.NoError(t, s.Verify(got.Header.Get(SignatureHeader), gotBody, time.Now()))
	w, err := ParseWebhook(gotBody)
	require.NoError(t, err)
	assert.Equal(t, id, w.ID)
	assert.Equal(t, Failed, w.Type)
	assert.Equal(t, "http://"+got.Host+"/pay/pay_x.y", s.PaymentURL("pay_x.y"))

	fail := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(400) }))
	defer fail.Close()
	_, err = NewSandbox("s", fail.URL, fail.URL).Deliver(context.Background(), Succeeded, Payment{ID: "p"}, time.Now())
	assert.Error(t, err, "a refused delivery is an error")
}

func FuzzParseWebhook(f *testing.F) {
	f.Add(Body("whd_1", Succeeded, Payment{ID: "pay_a.b", Amount: "1.00", Currency: "USD"}))
	f.Add([]byte(`{"id":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseWebhook(b)
		s := NewSandbox("k", "", "")
		_ = s.Verify(string(b), b, now)
	})
}

func TestSandboxRefundsOncePerRefundID(t *testing.T) {
	s := NewSandbox("k", "http://x", "")
	p := Payment{ID: "pay_1.X", OrderNumber: "1-A", Amount: "12.5", Currency: "USD", RefundID: "rf_1"}
	require.NoError(t, s.Refund(context.Background(), p))
	require.NoError(t, s.Refund(context.Background(), p), "a retried refund id is accepted")
	p2 := p
	p2.RefundID, p2.Amount = "rf_2", "3"
	require.NoError(t, s.Refund(context.Background(), p2))
	require.Equal(t, []Payment{p, p2}, s.Refunds(), "each refund id is paid out once")

	require.Error(t, s.Refund(context.Background(), Payment{RefundID: "rf_3"}), "no payment id")
	require.Error(t, s.Refund(context.Background(), Payment{ID: "pay_1.X"}), "no refund id")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, s.Refund(ctx, Payment{ID: "pay_1.X", RefundID: "rf_4"}), context.Canceled)
	require.Len(t, s.Refunds(), 2)
}
