package routing

import (
	"bytes"
	"encoding/gob"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/ask"
	"ticketd/event"
	"ticketd/idempotency"
)

// TestWireRoundTrip: forwarded requests and answers decode to what was
// encoded, the second time of a type too (a decoder that read the type's
// definitions once reads the value alone), and storefront commands stay
// storefront commands.
func TestWireRoundTrip(t *testing.T) {
	name := "Ann"
	for i := range 3 {
		cmd := event.PlaceOrder{Email: "a@x.io", Items: []event.OrderItem{{ItemType: event.ItemRegistrationType, ItemID: "tt_1", Quantity: i + 1}},
			Storefront: true, CheckoutSessionID: "cs_1"}
		req := &wireReq{EventID: "evt_1", CreateUnit: "bu_1", Cmd: wireCmd(event.OnStorefront(cmd))}
		b, err := encodeReq(req)
		require.NoError(t, err)
		require.Equal(t, byte(wireMark), b[0], "not the legacy gob")
		require.Contains(t, string(b), "!PlaceOrder", "the binary form (event/wire.go)")
		var got wireReq
		require.NoError(t, decodeReq(b, &got))
		require.Equal(t, *req, got)

		resp := &wireResp{Result: event.Order{ID: "ord_1", EventID: "evt_1", Name: &name, Status: "open"}}
		b, err = encodeResp(resp)
		require.NoError(t, err)
		require.Equal(t, byte(wireMark), b[0])
		require.Contains(t, string(b), "!Order")
		var gotResp wireResp
		require.NoError(t, decodeResp(b, &gotResp))
		require.Equal(t, *resp, gotResp)
	}
	// A command without a binary form goes in gob in the same framing.
	req := &wireReq{EventID: "evt_1", Cmd: event.ListOrders{Status: "paid", Limit: 5}}
	b, err := encodeReq(req)
	require.NoError(t, err)
	require.Equal(t, byte(wireMark), b[0])
	require.NotContains(t, string(b), "!ListOrders")
	var got wireReq
	require.NoError(t, decodeReq(b, &got))
	require.Equal(t, *req, got)
	// A business rejection keeps its code, reason and details.
	ee := &event.Error{Code: event.NotFound, Message: "no such order", Reason: "ORDER_NOT_FOUND", Details: []event.Detail{{Field: "ref", Reason: "unknown"}}}
	for _, resp := range []*wireResp{{Err: toWire(ee)}, {Moved: true}, {Err: &wireErr{Kind: errBusy, Msg: "busy"}}} {
		b, err := encodeResp(resp)
		require.NoError(t, err)
		var got wireResp
		require.NoError(t, decodeResp(b, &got))
		require.Equal(t, *resp, got)
	}
}

// TestWireFallsBackToGob: a value of a type that is not registered (or
// that holds an interface) travels as plain gob, which decodes too; and a
// peer's plain gob request is read.
func TestWireFallsBackToGob(t *testing.T) {
	gob.Register(map[string]string{})
	resp := &wireResp{Result: map[string]string{"a": "b"}}
	b, err := encodeResp(resp)
	require.NoError(t, err)
	require.NotEqual(t, byte(wireMark), b[0])
	var got wireResp
	require.NoError(t, decodeResp(b, &got))
	require.Equal(t, *resp, got)

	req := &wireReq{EventID: "evt_1", Cmd: event.GetOrder{Ref: "ord_1"}}
	var body bytes.Buffer
	require.NoError(t, gob.NewEncoder(&body).Encode(req))
	var gotReq wireReq
	require.NoError(t, decodeReq(body.Bytes(), &gotReq))
	require.Equal(t, *req, gotReq)
}

// TestWireMalformed: a cut or corrupted message is an error, never a
// panic, and a decoder that failed is not reused.
func TestWireMalformed(t *testing.T) {
	b, err := encodeReq(&wireReq{EventID: "evt_1", Cmd: event.GetOrder{Ref: "ord_1"}})
	require.NoError(t, err)
	for n := 1; n < len(b); n++ {
		var got wireReq
		require.Error(t, decodeReq(b[:n], &got), "cut at %d", n)
	}
	for i := 2; i < len(b); i++ {
		c := append([]byte(nil), b...)
		c[i] ^= 0xff
		var got wireReq
		_ = decodeReq(c, &got) // an error or another value, not a panic
	}
	var got wireReq
	require.NoError(t, decodeReq(b, &got))
	require.Equal(t, "ord_1", got.Cmd.(event.GetOrder).Ref)
}

// BenchmarkWire: a forwarded order and its answer, encoded and decoded.
func BenchmarkWire(b *testing.B) {
	name := "Ann"
	req := &wireReq{EventID: "evt_1", Cmd: wireCmd(event.OnStorefront(event.PlaceOrder{Email: "a@x.io",
		Items: []event.OrderItem{{ItemType: event.ItemRegistrationType, ItemID: "tt_1", Quantity: 1}}}))}
	resp := &wireResp{Result: event.Order{ID: "ord_1", EventID: "evt_1", Name: &name, Status: "open"}}
	b.Run("framed", func(b *testing.B) {
		for b.Loop() {
			rb, _ := encodeReq(req)
			var r wireReq
			_ = decodeReq(rb, &r)
			ab, _ := encodeResp(resp)
			var a wireResp
			_ = decodeResp(ab, &a)
		}
	})
	b.Run("gob", func(b *testing.B) {
		for b.Loop() {
			var rb, ab bytes.Buffer
			_ = gob.NewEncoder(&rb).Encode(req)
			var r wireReq
			_ = gob.NewDecoder(&rb).Decode(&r)
			_ = gob.NewEncoder(&ab).Encode(resp)
			var a wireResp
			_ = gob.NewDecoder(&ab).Decode(&a)
		}
	})
}

func cmd0() event.Command {
	return event.PlaceOrder{Email: "a@x.io", Items: []event.OrderItem{{ItemType: event.ItemRegistrationType, ItemID: "tt_1", Quantity: 1}}}
}

// TestWireKeyedRequest: a forwarded keyed write carries its
// Idempotency-Key record (http.KeyedWrite, whether it was claimed before
// included) to the owner, and a Replayed answer comes back as one.
func TestWireKeyedRequest(t *testing.T) {
	k := &idempotency.KeyedWrite{Key: idempotency.RecordKey("key_1", "k-1"), FP: [32]byte{1, 2, 3}, Expires: time.Unix(0, 1_795_000_000_123_456_789), Status: 201}
	for _, retried := range []bool{false, true} {
		k.Retried = retried
		cmd := event.PlaceOrder{Email: "a@x.io", Items: []event.OrderItem{{ItemType: event.ItemRegistrationType, ItemID: "tt_1", Quantity: 1}}}
		for _, c := range []event.Command{cmd, event.ListOrders{Limit: 5}} { // binary form, gob form
			req := &wireReq{EventID: "evt_1", Cmd: c, Keyed: k}
			b, err := encodeReq(req)
			require.NoError(t, err)
			var got wireReq
			require.NoError(t, decodeReq(b, &got))
			require.Equal(t, *req, got)
		}
	}
	// A record whose answer is a named view of the result, or fixed (a
	// refund's start and its refusal), travels as it is.
	k.View = "refund.order"
	refund := event.RequestRefund{Ref: "ord_1", Reason: "keyed"}
	for _, fixed := range []*idempotency.StoredResponse{nil, {Status: 503, ContentType: "application/json", Body: []byte(`{"error":{}}`), Durable: true}} {
		k.Fixed = fixed
		for _, c := range []event.Command{cmd0(), refund, event.ListOrders{Limit: 5}} {
			req := &wireReq{EventID: "evt_1", Cmd: c, Keyed: k}
			b, err := encodeReq(req)
			require.NoError(t, err)
			var got wireReq
			require.NoError(t, decodeReq(b, &got))
			require.Equal(t, *req, got)
		}
	}
	resp := &wireResp{Err: toWire(&ask.Replayed{Value: []byte("the record")})}
	b, err := encodeResp(resp)
	require.NoError(t, err)
	var got wireResp
	require.NoError(t, decodeResp(b, &got))
	r, ok := ask.IsReplayed(got.Err.err())
	require.True(t, ok)
	require.Equal(t, "the record", string(r.Value))
}
