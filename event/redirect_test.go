package event

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckRedirect: the one rule for URLs buyers are sent to. Any
// absolute https URL (http for loopback hosts) on the Developer API; on
// the storefront only at one of the publishable key's origins.
func TestCheckRedirect(t *testing.T) {
	shop := []string{"https://shop.example.com", "http://localhost:3000", "https://Other.example.com:8443/"}
	for _, tc := range []struct {
		url        string
		dev, store bool // accepted on the Developer API, on the storefront
	}{
		{"", true, true}, // absent: the caller decides whether it is required
		{"https://shop.example.com/thanks?x=1#top", true, true},
		{"https://SHOP.example.com:443/thanks", true, true},
		{"https://other.example.com:8443/back", true, true},
		{"http://localhost:3000/ok", true, true},
		{"https://evil.example/thanks", true, false},
		{"https://shop.example.com.evil.example/", true, false},
		{"https://shop.example.com@evil.example/", true, false},
		{"https://shop.example.com:8443/", true, false},
		{"https://other.example.com/back", true, false},
		{"http://localhost:4000/ok", true, false},
		{"http://127.0.0.1:3000/ok", true, false},
		{"http://[::1]:3000/ok", true, false},
		{"http://127.0.0.2/ok", true, false},
		{"http://shop.example.com/ok", false, false},
		{"javascript:alert(1)", false, false},
		{"javascript://shop.example.com/%0aalert(1)", false, false},
		{"data:text/html,hi", false, false},
		{"//evil.example/", false, false},
		{"/relative", false, false},
		{"ftp://shop.example.com/x", false, false},
		{"https:shop.example.com", false, false},
		{" https://shop.example.com/", false, false},
	} {
		devErr := checkRedirect("returnUrl", tc.url, false, nil)
		require.Equalf(t, tc.dev, devErr == nil, "developer %q: %v", tc.url, devErr)
		sfErr := checkRedirect("returnUrl", tc.url, true, shop)
		require.Equalf(t, tc.store, sfErr == nil, "storefront %q: %v", tc.url, sfErr)
		for _, err := range []error{devErr, sfErr} {
			var e *Error
			if err != nil {
				require.True(t, errors.As(err, &e))
				require.Equal(t, InvalidArgument, e.Code)
				require.Equal(t, "returnUrl", e.Details[0].Field, "the 400 names the field")
			}
		}
	}
	require.Error(t, checkRedirect("successUrl", "https://shop.example.com/", true, nil), "a key without origins sends buyers nowhere")
}

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST": true, "127.0.0.1": true, "127.1.2.3": true, "::1": true,
		"localhost.evil.example": false, "0.0.0.0": false, "10.0.0.1": false, "example.com": false, "": false,
	} {
		require.Equal(t, want, LoopbackHost(host), host)
	}
}

// TestRedirectCommands: confirm and checkout sessions apply the rule with
// the origins the shell passes, and name the field.
func TestRedirectCommands(t *testing.T) {
	r := newScriptRunner(t)
	for _, l := range []string{
		`CreateEvent {"name":"Conf","timezone":"UTC","startsAt":"2026-09-01T09:00:00Z"}`,
		`CreateTicketType {"name":"GA","capacity":5,"priceAmount":100}`,
		`UpdateTicketType ID=tt_1 {"status":"open"}`,
		`UpdateEvent {"status":"published"}`,
		`PlaceOrder {"email":"a@x.io","items":[{"itemType":"registration_type","itemId":"tt_1","quantity":1}]}`,
	} {
		require.NotContains(t, r.run(l), "error", l)
	}
	origins := []string{"https://shop.example.com"}
	items := []OrderItem{{ItemType: ItemRegistrationType, ItemID: "tt_1", Quantity: 1}}
	field := func(err error) string {
		var e *Error
		require.True(t, errors.As(err, &e), "%v", err)
		require.Equal(t, InvalidArgument, e.Code)
		return e.Details[0].Field
	}

	_, _, err := r.m.Decide(r.now, ConfirmOrder{Ref: "ord_1", Storefront: true, Origins: origins,
		SuccessURL: "https://shop.example.com/ok", CancelURL: "https://evil.example/no"})
	require.Equal(t, "cancelUrl", field(err))
	_, _, err = r.m.Decide(r.now, ConfirmOrder{Ref: "ord_1", Storefront: true, Origins: origins, SuccessURL: "https://evil.example/ok"})
	require.Equal(t, "successUrl", field(err))
	_, _, err = r.m.Decide(r.now, CreateCheckoutSession{Items: items, Storefront: true, Origins: origins, ReturnURL: "https://evil.example/"})
	require.Equal(t, "returnUrl", field(err))
	_, _, err = r.m.Decide(r.now, CreateCheckoutSession{Items: items, ReturnURL: "javascript:alert(1)"})
	require.Equal(t, "returnUrl", field(err), "the Developer API refuses what is not https too")
	_, _, err = r.m.Decide(r.now, CreateCheckoutSession{Items: items, ReturnURL: "//evil.example/"})
	require.Equal(t, "returnUrl", field(err))

	_, changes, err := r.m.Decide(r.now, CreateCheckoutSession{Items: items, ReturnURL: "https://anywhere.example/"})
	require.NoError(t, err, "the Developer API keeps any https URL")
	require.Len(t, changes, 1)
	_, changes, err = r.m.Decide(r.now, CreateCheckoutSession{Items: items, Storefront: true, Origins: origins, ReturnURL: "https://shop.example.com/back"})
	require.NoError(t, err)
	require.Len(t, changes, 1)
	_, changes, err = r.m.Decide(r.now, ConfirmOrder{Ref: "ord_1", Storefront: true, Origins: origins,
		SuccessURL: "https://shop.example.com/ok", CancelURL: "https://shop.example.com/no"})
	require.NoError(t, err)
	require.Equal(t, "https://shop.example.com/ok", changes[0].(OrderPaymentStarted).SuccessURL)
}
