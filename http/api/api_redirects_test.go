package api_test

// Black-box tests of the URLs the hosted pages send buyers to (successUrl,
// cancelUrl, returnUrl): on the storefront they must lie at one of the
// publishable key's origins; the Developer API takes any absolute https
// URL (http for localhost).

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAPIRedirectURLs(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t)

	t.Run("storefront confirm: successUrl and cancelUrl at the key's origins", func(t *testing.T) {
		t.Parallel()
		s := f.store(t, map[string]any{"priceAmount": 25})
		num := apiS(apiWant(t, s.sfOrder(t, s.sf, s.tt, "buyer@example.com", nil), 201), "orderNumber")
		confirm := s.sfPath("/orders/" + num + "/confirm")
		for _, tc := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"successUrl": "https://evil.example/ok"}, "successUrl"},
			{map[string]any{"successUrl": "https://shop.example.com.evil.example/ok"}, "successUrl"},
			{map[string]any{"successUrl": "https://shop.example.com@evil.example/ok"}, "successUrl"},
			{map[string]any{"successUrl": "http://shop.example.com/ok"}, "successUrl"},
			{map[string]any{"successUrl": "http://localhost:4000/ok"}, "successUrl"},
			{map[string]any{"successUrl": "https://shop.example.com/ok", "cancelUrl": "https://evil.example/no"}, "cancelUrl"},
			{map[string]any{"cancelUrl": "https://shop.example.com:8443/no"}, "cancelUrl"},
		} {
			e := apiWantErr(t, s.sf.Do("POST", confirm, tc.body), 400, "INVALID_ARGUMENT")
			assert.Equalf(t, []string{tc.field}, apiFields(e), "%v", tc.body)
		}
		assert.Equal(t, "open", apiWant(t, s.sf.Do("GET", s.sfPath("/orders/"+num), nil), 200)["status"], "a refused confirm changes nothing")

		o := apiWant(t, s.sf.Do("POST", confirm, map[string]any{
			"successUrl": "https://shop.example.com/thanks?o=1", "cancelUrl": "http://localhost:3000/cart"}), 200)
		assert.Equal(t, "awaiting_payment", o["status"])
		assert.Equal(t, "https://shop.example.com/thanks?o=1", o["successUrl"])
		assert.Equal(t, "http://localhost:3000/cart", o["cancelUrl"])
	})

	t.Run("storefront checkout sessions: returnUrl at the key's origins", func(t *testing.T) {
		t.Parallel()
		s := f.store(t, nil)
		sessions := s.sfPath("/checkout-sessions")
		for _, bad := range []string{
			"https://evil.example/back", "http://shop.example.com/back", "http://127.0.0.1:3000/back",
		} {
			apiWant400(t, s.sf.Do("POST", sessions, map[string]any{"items": apiTicket(s.tt), "returnUrl": bad}), "returnUrl")
		}
		// Not URIs at all: the documents say format uri, so these break
		// the contract on purpose.
		for _, bad := range []string{"javascript:alert(document.cookie)", "//evil.example/back", "/back"} {
			apiWant400(t, s.sf.AllowInvalidRequest().Do("POST", sessions, map[string]any{"items": apiTicket(s.tt), "returnUrl": bad}), "returnUrl")
		}
		cs := apiWant(t, s.sf.Do("POST", sessions, map[string]any{"items": apiTicket(s.tt), "returnUrl": "https://shop.example.com/back?x=1"}), 201)
		assert.Equal(t, "https://shop.example.com/back?x=1", cs["returnUrl"])

		// A key without origins can send buyers nowhere but the hosted pages.
		bare := f.unit(t)
		ev := apiPublished(t, bare.dev)
		tt := apiOpenType(t, bare.dev, ev, nil)
		apiWant400(t, bare.sf.Do("POST", "/storefront/v1/events/"+ev+"/checkout-sessions",
			map[string]any{"items": apiTicket(tt), "returnUrl": "https://shop.example.com/back"}), "returnUrl")
		apiWant(t, bare.sf.Do("POST", "/storefront/v1/events/"+ev+"/checkout-sessions", map[string]any{"items": apiTicket(tt)}), 201)
	})

	t.Run("developer API: any absolute https returnUrl, http for localhost", func(t *testing.T) {
		t.Parallel()
		s := f.store(t, nil)
		sessions := "/v1/events/" + s.ev + "/checkout-sessions"
		apiWant400(t, s.dev.Do("POST", sessions, map[string]any{"items": apiTicket(s.tt), "returnUrl": "http://evil.example/back"}), "returnUrl")
		apiWant400(t, s.dev.Do("POST", sessions, map[string]any{"items": apiTicket(s.tt), "returnUrl": "ftp://evil.example/back"}), "returnUrl")
		for _, bad := range []string{"javascript:alert(1)", "//evil.example", "data:text/html,hi"} {
			apiWant400(t, s.dev.AllowInvalidRequest().Do("POST", sessions, map[string]any{"items": apiTicket(s.tt), "returnUrl": bad}), "returnUrl")
		}
		for _, good := range []string{"https://anywhere.example/back", "http://localhost:9999/back", "http://127.0.0.1/back"} {
			cs := apiWant(t, s.dev.Do("POST", sessions, map[string]any{"items": apiTicket(s.tt), "returnUrl": good}), 201)
			assert.Equal(t, good, cs["returnUrl"])
		}
	})
}
