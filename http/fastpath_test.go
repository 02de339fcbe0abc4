package http

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"ticketd/event"
)

// generalErrorAnswer is what WriteError wrote before any pre-rendered
// answer: errorResponse's status and envelope, by appendErrorJSON.
func generalErrorAnswer(err error) (int, string) {
	status, env, _ := errorResponse(err)
	return status, string(appendErrorJSON(nil, env.Error))
}

// TestSoldOutPrerendered: the sold-out refusal's pre-rendered answer is
// byte for byte the general path's, for the machine's refusal (the view's
// and the machine's own constructor), and every other error still takes
// the general path.
func TestSoldOutPrerendered(t *testing.T) {
	s := &Server{}
	for _, err := range []error{
		event.Reasonf(event.FailedPrecondition, event.ReasonSoldOut, "sold out"),
		&event.Error{Code: event.FailedPrecondition, Reason: event.ReasonSoldOut, Message: "sold out"},
	} {
		require.True(t, isSoldOut(err))
		var rc fasthttp.RequestCtx
		rc.Response.SetBodyString("left over from before")
		s.WriteError(&rc, err)
		status, body := generalErrorAnswer(err)
		require.Equal(t, 412, status)
		require.Equal(t, status, rc.Response.StatusCode())
		require.Equal(t, body, string(rc.Response.Body()))
		require.Equal(t, "application/json", string(rc.Response.Header.ContentType()))
		require.JSONEq(t, `{"error":{"code":412,"status":"FAILED_PRECONDITION","message":"sold out","reason":"SOLD_OUT"}}`, body)
	}
	for _, err := range []error{
		event.Reasonf(event.FailedPrecondition, event.ReasonSoldOut, "sold out: 2 left"),
		&event.Error{Code: event.FailedPrecondition, Reason: event.ReasonSoldOut, Message: "sold out", Details: []event.Detail{{Field: "items", Reason: "x"}}},
		&event.Error{Code: event.ResourceExhausted, Reason: event.ReasonSoldOut, Message: "sold out"},
		&event.Error{Code: event.FailedPrecondition, Reason: event.ReasonQueueTokenRequired, Message: "sold out"},
		fmt.Errorf("wrapped: %w", event.Reasonf(event.FailedPrecondition, event.ReasonSoldOut, "sold out")),
		NewError(412, "sold out").WithReason(event.ReasonSoldOut),
		errors.New("sold out"),
	} {
		require.False(t, isSoldOut(err), "%#v", err)
		var rc fasthttp.RequestCtx
		s.WriteError(&rc, err)
		status, body := generalErrorAnswer(err)
		require.Equal(t, status, rc.Response.StatusCode())
		require.Equal(t, body, string(rc.Response.Body()))
	}
}

// TestHoldClientCache: the server's cache of hold client ids answers
// HoldClientOf for every (key, address), whatever was cached before in
// the same slot: IPv4, IPv6 (by /64), mapped addresses, many keys.
func TestHoldClientCache(t *testing.T) {
	h := newHoldClientCache()
	r := rand.New(rand.NewPCG(7, 8))
	keys := []string{"key_a", "key_b", "key_c", ""}
	var addrs []netip.Addr
	for range 3000 {
		var a netip.Addr
		switch r.IntN(3) {
		case 0:
			a = netip.AddrFrom4([4]byte{10, byte(r.IntN(4)), byte(r.IntN(256)), byte(r.IntN(256))})
		case 1:
			var b [16]byte
			b[0], b[1], b[7], b[15] = 0x20, 0x01, byte(r.IntN(8)), byte(r.IntN(256))
			a = netip.AddrFrom16(b)
		default:
			a = netip.AddrFrom16(netip.AddrFrom4([4]byte{192, 0, 2, byte(r.IntN(256))}).As16())
		}
		addrs = append(addrs, a)
	}
	for i := range 200_000 {
		k, a := keys[r.IntN(len(keys))], addrs[r.IntN(len(addrs))]
		require.Equal(t, HoldClientOf(k, a), h.of(k, a), "request %d: key %q address %s", i, k, a)
	}
}
