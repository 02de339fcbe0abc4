package pages_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"io"
	nethttp "net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app"
	"ticketd/app/apptest"
	"ticketd/wallet"
	"ticketd/wallet/apple/appletest"
	"ticketd/wallet/google"
	"ticketd/wallet/google/googletest"
)

// recorder is the test double of APNs and of the Google Wallet API: it
// records what the service asked of them.
type recorder struct {
	mu      sync.Mutex
	pushes  []string // topic/token
	invalid []string // object ids
}

func (r *recorder) Push(_ context.Context, topic, token string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pushes = append(r.pushes, topic+"/"+token)
	return nil
}

func (r *recorder) Invalidate(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.invalid = append(r.invalid, id)
	return nil
}

func (r *recorder) got() ([]string, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.pushes...), append([]string(nil), r.invalid...)
}

// withWallets configures both wallets with test credentials and the
// recorder in place of Apple's and Google's services.
func withWallets(t *testing.T, rec *recorder) (serviceOption, *googleKey) {
	return withWalletsTB(t, rec)
}

func withWalletsTB(t testing.TB, rec *recorder) (serviceOption, *googleKey) {
	af := appletest.Make(t)
	gk, key := googletest.Make(t)
	return func(c *app.Config) {
		c.Wallet = app.WalletConfig{ApplePassTypeID: appletest.PassTypeID, AppleTeamID: appletest.TeamID,
			ApplePassCert: af.Cert, ApplePassKey: af.Key, AppleWWDRCert: af.WWDR,
			GoogleIssuerID: googletest.IssuerID, GoogleKey: gk}
		if c.Tune == nil {
			c.Tune = &app.Tuning{}
		}
		c.Tune.Wallet = func(wc *wallet.Config) { wc.Pusher, wc.Updater = rec, rec }
	}, &googleKey{pub: &key.PublicKey, wwdr: af.WWDR}
}

type googleKey struct {
	pub  any
	wwdr string
}

// gated opens the pass page's gate on a new browser.
func gated(t *testing.T, passURL, email string) *apptest.Browser {
	b := apptest.NewBrowser(t)
	p := b.Post(passURL, url.Values{"form": {"gate"}, "email": {email}})
	require.Equal(t, 303, p.Status, p.Body)
	return b
}

func unzipPass(t *testing.T, body string) map[string][]byte {
	zr, err := zip.NewReader(strings.NewReader(body), int64(len(body)))
	require.NoError(t, err)
	out := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		require.NoError(t, err)
		out[f.Name], err = io.ReadAll(rc)
		require.NoError(t, err)
		rc.Close()
	}
	return out
}

func passJSON(t *testing.T, files map[string][]byte) map[string]any {
	var pj map[string]any
	require.NoError(t, json.Unmarshal(files["pass.json"], &pj))
	return pj
}

// TestBuyersTicketPDFAndWallets runs decisions §21 through the real
// service: the PDF and both wallets behind the pass page's gate; Apple's
// pass web service with right and wrong tokens; a cancellation and a
// rotation pushing to the registered device and invalidating the saved
// Google object.
func TestBuyersTicketPDFAndWallets(t *testing.T) {
	rec := &recorder{}
	opt, gk := withWallets(t, rec)
	s := pgStart(t, opt)
	u := s.NewUnit("Wallets")
	ev := pgPublished(t, s, u.Secret, 0)
	loc := pgAPI(t, s, s.Admin, "PUT", "/admin/v1/events/"+ev.ID+"/location", map[string]any{"venue": "Kulturbrauerei", "address": "Schönhauser Allee 36, Berlin"})
	require.Equal(t, "Kulturbrauerei", loc["venue"])
	reg := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/registrations", map[string]any{
		"email": "ada@example.com", "name": "Ada Lovelace", "registrationTypeId": ev.TypeID})
	passURL, code, regID := reg["passUrl"].(string), reg["checkinCode"].(string), reg["id"].(string)
	token := strings.TrimPrefix(passURL, s.URL+"/pass/")

	// Behind the gate: a new device is sent to the pass page.
	stranger := apptest.NewBrowser(t)
	for _, f := range []string{"/ticket.pdf", "/wallet.pkpass", "/google-wallet"} {
		p := stranger.Get(passURL + f)
		require.Equal(t, 303, p.Status, f)
		assert.True(t, strings.HasSuffix(p.Header.Get("Location"), "/pass/"+token), f)
	}
	phone := gated(t, passURL, "ada@example.com")

	// The pass page offers the PDF and both wallets.
	p := phone.Get(passURL)
	require.Equal(t, 200, p.Status)
	for _, id := range []string{`id="ticket-pdf" href="/pass/` + token + `/ticket.pdf"`, `id="apple-wallet" href="/pass/` + token + `/wallet.pkpass"`,
		`id="google-wallet" href="/pass/` + token + `/google-wallet"`} {
		assert.Contains(t, p.Body, id)
	}

	// The PDF: pdftotext finds the attendee and the code; the QR decodes.
	p = phone.Get(passURL + "/ticket.pdf")
	require.Equal(t, 200, p.Status)
	assert.Equal(t, "application/pdf", p.Header.Get("Content-Type"))
	assert.Equal(t, "no-store", p.Header.Get("Cache-Control"))
	dir := t.TempDir()
	pdf := filepath.Join(dir, "t.pdf")
	require.NoError(t, os.WriteFile(pdf, []byte(p.Body), 0o600))
	txt, err := exec.Command("pdftotext", pdf, "-").CombinedOutput()
	require.NoError(t, err, "%s", txt)
	for _, want := range []string{"Ada Lovelace", code, "Gophers Summit", "General admission", "Kulturbrauerei", "Europe/Berlin"} {
		assert.Contains(t, string(txt), want)
	}
	out, err := exec.Command("pdftoppm", "-r", "150", "-png", "-singlefile", pdf, filepath.Join(dir, "page")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	qr, err := exec.Command("zbarimg", "--quiet", "--raw", filepath.Join(dir, "page.png")).Output()
	require.NoError(t, err)
	assert.Equal(t, code, strings.TrimSpace(string(qr)))

	// The Apple pass: signed, the code as its barcode, the web service.
	p = phone.Get(passURL + "/wallet.pkpass")
	require.Equal(t, 200, p.Status)
	assert.Equal(t, "application/vnd.apple.pkpass", p.Header.Get("Content-Type"))
	files := unzipPass(t, p.Body)
	for n, c := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), c, 0o600))
	}
	cmd := exec.Command("openssl", "smime", "-verify", "-inform", "DER", "-binary", "-noverify", "-content", "manifest.json", "-in", "signature", "-out", os.DevNull)
	cmd.Dir = dir
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	pj := passJSON(t, files)
	assert.Equal(t, code, pj["barcodes"].([]any)[0].(map[string]any)["message"])
	assert.Equal(t, s.URL+"/pass/apple", pj["webServiceURL"])
	serial, auth := pj["serialNumber"].(string), pj["authenticationToken"].(string)
	require.True(t, strings.HasPrefix(serial, ev.ID+"."+regID+"."), serial)

	ws := s.URL + "/pass/apple/v1"
	call := func(method, path, auth, body string, header ...string) (int, nethttp.Header, []byte) {
		req, err := nethttp.NewRequest(method, ws+path, strings.NewReader(body))
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", "ApplePass "+auth)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := nethttp.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, b
	}
	regPath := "/devices/dev1/registrations/" + appletest.PassTypeID + "/" + serial
	st, _, _ := call("POST", regPath, "0123456789abcdef0123456789abcdef", `{"pushToken":"push-1"}`)
	assert.Equal(t, 401, st, "wrong token")
	st, _, _ = call("POST", regPath, "", `{"pushToken":"push-1"}`)
	assert.Equal(t, 401, st, "no token")
	st, _, _ = call("POST", regPath, auth, `{"pushToken":"push-1"}`)
	assert.Equal(t, 201, st, "registered")
	st, _, _ = call("POST", regPath, auth, `{"pushToken":"push-1"}`)
	assert.Equal(t, 200, st, "already registered")
	st, _, _ = call("POST", "/devices/dev1/registrations/pass.other/"+serial, auth, `{"pushToken":"push-1"}`)
	assert.Equal(t, 404, st, "another pass type")
	st, _, body := call("GET", "/devices/dev1/registrations/"+appletest.PassTypeID, "", "")
	require.Equal(t, 200, st, "%s", body)
	var upd struct {
		SerialNumbers []string `json:"serialNumbers"`
		LastUpdated   string   `json:"lastUpdated"`
	}
	require.NoError(t, json.Unmarshal(body, &upd))
	assert.Equal(t, []string{serial}, upd.SerialNumbers)
	st, _, _ = call("GET", "/devices/dev1/registrations/"+appletest.PassTypeID+"?passesUpdatedSince="+upd.LastUpdated, "", "")
	assert.Equal(t, 204, st, "nothing changed since")
	st, _, _ = call("GET", "/devices/nobody/registrations/"+appletest.PassTypeID, "", "")
	assert.Equal(t, 204, st, "no registrations")
	st, _, _ = call("GET", "/passes/"+appletest.PassTypeID+"/"+serial, "0123456789abcdef0123456789abcdef", "")
	assert.Equal(t, 401, st, "latest with a wrong token")
	st, hdr, body := call("GET", "/passes/"+appletest.PassTypeID+"/"+serial, auth, "")
	require.Equal(t, 200, st)
	assert.Nil(t, passJSON(t, unzipPass(t, string(body)))["voided"])
	st, _, _ = call("GET", "/passes/"+appletest.PassTypeID+"/"+serial, auth, "", "If-Modified-Since", hdr.Get("Last-Modified"))
	assert.Equal(t, 304, st)
	st, _, _ = call("POST", "/log", "", `{"logs":["a device said hello"]}`)
	assert.Equal(t, 200, st)

	// Google: the Save link's JWT verifies with the account's key and
	// carries the code.
	p = phone.Get(passURL + "/google-wallet")
	require.Equal(t, 303, p.Status)
	link := p.Header.Get("Location")
	require.True(t, strings.HasPrefix(link, google.SaveBase), link)
	var claims google.SaveClaims
	_, err = jwt.ParseWithClaims(strings.TrimPrefix(link, google.SaveBase), &claims, func(*jwt.Token) (any, error) { return gk.pub, nil },
		jwt.WithValidMethods([]string{"RS256"}))
	require.NoError(t, err)
	obj := claims.Payload.EventTicketObjects[0]
	assert.Equal(t, code, obj.Barcode.Value)
	assert.Equal(t, "Ada Lovelace", obj.TicketHolderName)
	assert.Equal(t, []string{s.URL}, claims.Origins)

	// The event moves: the device is told (no Google object loses
	// validity for it).
	pgAPI(t, s, u.Secret, "PATCH", "/v1/events/"+ev.ID, map[string]any{"startsAt": time.Now().Add(40 * 24 * time.Hour).UTC().Format(time.RFC3339)})
	require.Eventually(t, func() bool { ps, _ := rec.got(); return len(ps) >= 1 }, 10*time.Second, 10*time.Millisecond)
	st, _, body = call("GET", "/devices/dev1/registrations/"+appletest.PassTypeID+"?passesUpdatedSince="+upd.LastUpdated, "", "")
	require.Equal(t, 200, st, "the moved event's pass is listed as updated")
	require.Contains(t, string(body), serial)

	// A cancellation: the device is pushed, the pass is void, the Google
	// object invalid.
	pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/registrations/"+regID+"/cancel", nil)
	require.Eventually(t, func() bool { ps, inv := rec.got(); return len(ps) >= 2 && len(inv) == 1 }, 10*time.Second, 10*time.Millisecond)
	pushes, invalid := rec.got()
	assert.Equal(t, appletest.PassTypeID+"/push-1", pushes[len(pushes)-1])
	assert.Equal(t, []string{obj.ID}, invalid)
	st, _, body = call("GET", "/passes/"+appletest.PassTypeID+"/"+serial, auth, "")
	require.Equal(t, 200, st)
	assert.Equal(t, true, passJSON(t, unzipPass(t, string(body)))["voided"], "the cancelled pass is void")
	assert.Equal(t, 303, phone.Get(passURL+"/ticket.pdf").Status, "a cancelled registration has no PDF")

	// The wallets' keys (a device registration both ways, a Save link made)
	// are the key schema's (persistence.Schema).
	require.NoError(t, s.Sys.Store().CheckSchema(20))

	// Unregister: wrong token refused, right one forgets the device.
	st, _, _ = call("DELETE", regPath, "0123456789abcdef0123456789abcdef", "")
	assert.Equal(t, 401, st)
	st, _, _ = call("DELETE", regPath, auth, "")
	assert.Equal(t, 200, st)
	st, _, _ = call("GET", "/devices/dev1/registrations/"+appletest.PassTypeID, "", "")
	assert.Equal(t, 204, st)
}

// TestRotatedPassVoidsTheOldOne: rotating a leaked pass voids the wallet
// passes made from the old link (new serial for the new link) and marks
// the old Google object invalid.
func TestRotatedPassVoidsTheOldOne(t *testing.T) {
	rec := &recorder{}
	opt, _ := withWallets(t, rec)
	s := pgStart(t, opt)
	u := s.NewUnit("Rotation")
	ev := pgPublished(t, s, u.Secret, 0)
	reg := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/registrations", map[string]any{
		"email": "grace@example.com", "name": "Grace", "registrationTypeId": ev.TypeID})
	passURL, regID := reg["passUrl"].(string), reg["id"].(string)
	phone := gated(t, passURL, "grace@example.com")
	pj := passJSON(t, unzipPass(t, phone.Get(passURL+"/wallet.pkpass").Body))
	serial, auth := pj["serialNumber"].(string), pj["authenticationToken"].(string)
	link := phone.Get(passURL + "/google-wallet").Header.Get("Location")
	require.True(t, strings.HasPrefix(link, google.SaveBase))
	req, _ := nethttp.NewRequest("POST", s.URL+"/pass/apple/v1/devices/dev9/registrations/"+appletest.PassTypeID+"/"+serial,
		bytes.NewReader([]byte(`{"pushToken":"push-9"}`)))
	req.Header.Set("Authorization", "ApplePass "+auth)
	res, err := nethttp.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 201, res.StatusCode)

	rot := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/registrations/"+regID+"/rotate-pass", nil)
	require.Eventually(t, func() bool { ps, inv := rec.got(); return len(ps) == 1 && len(inv) == 1 }, 10*time.Second, 10*time.Millisecond)
	_, invalid := rec.got()
	assert.Equal(t, googletest.IssuerID+"."+strings.ReplaceAll(serial, "/", "_"), invalid[0])

	req, _ = nethttp.NewRequest("GET", s.URL+"/pass/apple/v1/passes/"+appletest.PassTypeID+"/"+serial, nil)
	req.Header.Set("Authorization", "ApplePass "+auth)
	res, err = nethttp.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	old := passJSON(t, unzipPass(t, string(b)))
	assert.Equal(t, true, old["voided"], "the old link's pass is void")

	newURL := rot["passUrl"].(string)
	fresh := passJSON(t, unzipPass(t, gated(t, newURL, "grace@example.com").Get(newURL+"/wallet.pkpass").Body))
	assert.NotEqual(t, serial, fresh["serialNumber"], "the new link's pass is another")
	assert.Nil(t, fresh["voided"])
}
