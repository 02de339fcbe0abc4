package google_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/wallet/google"
	"ticketd/wallet/google/googletest"
)

// TestSaveLinkVerifiesAndNamesTheCode: the Save link's JWT verifies
// (RS256) with the service account's public key alone, and carries the
// event ticket class and an object whose QR barcode is the check-in code.
func TestSaveLinkVerifiesAndNamesTheCode(t *testing.T) {
	path, key := googletest.Make(t)
	iss, err := google.Load(googletest.IssuerID, path, []string{"https://tickets.example"})
	require.NoError(t, err)
	start := time.Date(2026, 12, 5, 18, 30, 0, 0, time.UTC)
	link, err := iss.SaveURL(google.Ticket{EventID: "evt_01ab", Serial: "evt_01ab.reg_01cd.0a1b2c3d", EventName: "Winter Jazz Night",
		StartsAt: &start, Timezone: "Europe/Berlin", Venue: "Kulturbrauerei", Attendee: "Zoë Müller", TicketType: "Standing",
		CheckinCode: "K7QF-M2XD-93PA"}, "ticketd")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(link, google.SaveBase))
	var claims google.SaveClaims
	tok, err := jwt.ParseWithClaims(strings.TrimPrefix(link, google.SaveBase), &claims, func(t *jwt.Token) (any, error) {
		return &key.PublicKey, nil
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithAudience("google"), jwt.WithIssuer("wallet@ticketd-test.iam.gserviceaccount.com"))
	require.NoError(t, err)
	assert.True(t, tok.Valid)
	assert.Equal(t, "kid123", tok.Header["kid"])
	assert.Equal(t, "savetowallet", claims.Typ)
	assert.Equal(t, []string{"https://tickets.example"}, claims.Origins)
	require.Len(t, claims.Payload.EventTicketObjects, 1)
	obj := claims.Payload.EventTicketObjects[0]
	assert.Equal(t, "QR_CODE", obj.Barcode.Type)
	assert.Equal(t, "K7QF-M2XD-93PA", obj.Barcode.Value)
	assert.Equal(t, googletest.IssuerID+".evt_01ab.reg_01cd.0a1b2c3d", obj.ID)
	assert.Equal(t, "Zoë Müller", obj.TicketHolderName)
	require.Len(t, claims.Payload.EventTicketClasses, 1)
	cl := claims.Payload.EventTicketClasses[0]
	assert.Equal(t, obj.ClassID, cl.ID)
	assert.Equal(t, googletest.IssuerID+".evt_01ab", cl.ID)
	raw, _ := json.Marshal(cl)
	assert.Contains(t, string(raw), `"start":"2026-12-05T19:30:00+01:00"`)
	assert.Contains(t, string(raw), `"value":"Winter Jazz Night"`)

	// Another key does not verify it.
	_, other := googletest.Make(t)
	_, err = jwt.Parse(strings.TrimPrefix(link, google.SaveBase), func(*jwt.Token) (any, error) { return &other.PublicKey, nil })
	assert.Error(t, err)
}

func TestLoadRefusesBadKeys(t *testing.T) {
	good, _ := googletest.Make(t)
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(s), 0o600))
		return p
	}
	for name, tc := range map[string]struct{ issuer, file, want string }{
		"missing file":    {googletest.IssuerID, filepath.Join(dir, "none.json"), "TICKETD_GOOGLE_WALLET_KEY: open"},
		"not json":        {googletest.IssuerID, write("a.json", "-----BEGIN PRIVATE KEY-----"), "not a JSON key"},
		"not an account":  {googletest.IssuerID, write("b.json", `{"type":"authorized_user"}`), `type "authorized_user"`},
		"bad private key": {googletest.IssuerID, write("c.json", `{"type":"service_account","client_email":"a@b","private_key":"nope"}`), "private_key is not PEM"},
		"issuer id":       {"abc", good, "is not an issuer id"},
		"half configured": {"", good, "must both be set"},
	} {
		_, err := google.Load(tc.issuer, tc.file, nil)
		if assert.ErrorIs(t, err, google.ErrConfig, name) {
			assert.Contains(t, err.Error(), tc.want, name)
		}
	}
}

// TestAPIInvalidate: the real client against a local server standing in
// for Google: a token from a JWT bearer grant signed by the account's key
// (kept for the next call), then PATCH state INVALID; a 404 (never saved)
// is no error, a 500 is.
func TestAPIInvalidate(t *testing.T) {
	path, key := googletest.Make(t)
	iss, err := google.Load(googletest.IssuerID, path, nil)
	require.NoError(t, err)
	var mu sync.Mutex
	var calls []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path == "/token" {
			require.NoError(t, r.ParseForm())
			_, err := jwt.Parse(r.Form.Get("assertion"), func(*jwt.Token) (any, error) { return &key.PublicKey, nil })
			if err != nil || r.Form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
				w.WriteHeader(400)
				return
			}
			calls = append(calls, "token")
			_, _ = io.WriteString(w, `{"access_token":"ya29.test","expires_in":3600,"token_type":"Bearer"}`)
			return
		}
		b, _ := io.ReadAll(r.Body)
		calls = append(calls, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization")+" "+string(b))
		switch {
		case strings.HasSuffix(r.URL.Path, ".missing"):
			w.WriteHeader(404)
		case strings.HasSuffix(r.URL.Path, ".broken"):
			w.WriteHeader(500)
		default:
			_, _ = io.WriteString(w, `{}`)
		}
	}))
	t.Cleanup(srv.Close)
	api := google.NewAPI(iss)
	api.Base, api.TokenURL = srv.URL+"/walletobjects/v1", srv.URL+"/token"
	ctx := context.Background()
	require.NoError(t, api.Invalidate(ctx, googletest.IssuerID+".a"))
	require.NoError(t, api.Invalidate(ctx, googletest.IssuerID+".missing"))
	assert.Error(t, api.Invalidate(ctx, googletest.IssuerID+".broken"))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"token",
		"PATCH /walletobjects/v1/eventTicketObject/" + googletest.IssuerID + ".a Bearer ya29.test {\"state\":\"INVALID\"}",
		"PATCH /walletobjects/v1/eventTicketObject/" + googletest.IssuerID + ".missing Bearer ya29.test {\"state\":\"INVALID\"}",
		"PATCH /walletobjects/v1/eventTicketObject/" + googletest.IssuerID + ".broken Bearer ya29.test {\"state\":\"INVALID\"}"}, calls)
}
