package apple_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/wallet/apple"
	"ticketd/wallet/apple/appletest"
)

func samplePass() apple.Pass {
	start := time.Date(2026, 12, 5, 18, 30, 0, 0, time.UTC)
	return apple.Pass{Serial: "evt_1.reg_1.0a1b2c3d", AuthToken: apple.AuthToken([]byte("secret"), "evt_1.reg_1.0a1b2c3d"),
		EventName: "Winter Jazz Night", StartsAt: &start, Timezone: "Europe/Berlin", Venue: "Kulturbrauerei",
		Address: "Schönhauser Allee 36", Attendee: "Zoë Müller", TicketType: "Standing", CheckinCode: "K7QF-M2XD-93PA",
		PassURL: "https://tickets.example/pass/p_1"}
}

// unzip reads a .pkpass into its files.
func unzip(t *testing.T, b []byte) map[string][]byte {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
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

// TestPkpassSignedAndComplete builds a pass with a test CA's
// certificates: every file's SHA-1 is in the manifest, openssl accepts
// the detached signature over manifest.json (and refuses it over a
// changed manifest), the signature carries the WWDR certificate, and
// pass.json is an event ticket with the check-in code as its QR barcode.
func TestPkpassSignedAndComplete(t *testing.T) {
	f := appletest.Make(t)
	s, err := apple.Load(f.Config("https://tickets.example/pass/apple"), time.Now())
	require.NoError(t, err)
	b, err := s.Build(samplePass())
	require.NoError(t, err)
	files := unzip(t, b)
	require.Contains(t, files, "manifest.json")
	require.Contains(t, files, "signature")
	var manifest map[string]string
	require.NoError(t, json.Unmarshal(files["manifest.json"], &manifest))
	assert.Len(t, manifest, len(files)-2, "every file but the manifest and signature is listed")
	for name, sum := range manifest {
		got := sha1.Sum(files[name])
		assert.Equal(t, hex.EncodeToString(got[:]), sum, name)
	}
	for _, n := range []string{"pass.json", "icon.png", "icon@2x.png"} {
		assert.Contains(t, manifest, n)
	}

	dir := t.TempDir()
	for n, c := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), c, 0o600))
	}
	cmd := exec.Command("openssl", "smime", "-verify", "-inform", "DER", "-binary", "-noverify",
		"-content", "manifest.json", "-in", "signature", "-out", os.DevNull)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "openssl refused the signature: %s", out)
	assert.Contains(t, string(out), "Verification successful")
	// Verified against the test CA as the trust root, the chain holds.
	cmd = exec.Command("openssl", "smime", "-verify", "-inform", "DER", "-binary", "-CAfile", f.WWDR, "-purpose", "any",
		"-content", "manifest.json", "-in", "signature", "-out", os.DevNull)
	cmd.Dir = dir
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "openssl refused the chain: %s", out)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.json"), append(files["manifest.json"], ' '), 0o600))
	cmd = exec.Command("openssl", "smime", "-verify", "-inform", "DER", "-binary", "-noverify",
		"-content", "manifest.json", "-in", "signature", "-out", os.DevNull)
	cmd.Dir = dir
	_, err = cmd.CombinedOutput()
	assert.Error(t, err, "a changed manifest does not verify")

	var pj map[string]any
	require.NoError(t, json.Unmarshal(files["pass.json"], &pj))
	assert.EqualValues(t, 1, pj["formatVersion"])
	assert.Equal(t, appletest.PassTypeID, pj["passTypeIdentifier"])
	assert.Equal(t, appletest.TeamID, pj["teamIdentifier"])
	assert.Equal(t, "evt_1.reg_1.0a1b2c3d", pj["serialNumber"])
	assert.Equal(t, "https://tickets.example/pass/apple", pj["webServiceURL"])
	assert.Len(t, pj["authenticationToken"], 32)
	bcs := pj["barcodes"].([]any)
	require.Len(t, bcs, 1)
	bc := bcs[0].(map[string]any)
	assert.Equal(t, "PKBarcodeFormatQR", bc["format"])
	assert.Equal(t, "K7QF-M2XD-93PA", bc["message"])
	et := pj["eventTicket"].(map[string]any)
	primary := et["primaryFields"].([]any)[0].(map[string]any)
	assert.Equal(t, "Winter Jazz Night", primary["value"])
	secondary := et["secondaryFields"].([]any)
	assert.Equal(t, "2026-12-05T19:30:00+01:00", secondary[0].(map[string]any)["value"], "the event's own clock")
	assert.Equal(t, "Kulturbrauerei", secondary[1].(map[string]any)["value"])
	aux := et["auxiliaryFields"].([]any)
	assert.Equal(t, "Zoë Müller", aux[0].(map[string]any)["value"])
	assert.Nil(t, pj["voided"])

	p := samplePass()
	p.Voided = true
	b, err = s.Build(p)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(unzip(t, b)["pass.json"], &pj))
	assert.Equal(t, true, pj["voided"])
}

// TestLoadRefusesBadConfiguration: what cannot sign a pass Wallet accepts
// is refused at start, each with the setting at fault.
func TestLoadRefusesBadConfiguration(t *testing.T) {
	f := appletest.Make(t)
	now := time.Now()
	for name, tc := range map[string]struct {
		edit func(c *apple.Config)
		now  time.Time
		want string
	}{
		"missing setting":   {func(c *apple.Config) { c.TeamID = "" }, now, "TICKETD_APPLE_TEAM_ID not set"},
		"missing file":      {func(c *apple.Config) { c.CertFile = filepath.Join(t.TempDir(), "nope.pem") }, now, "TICKETD_APPLE_PASS_CERT: open"},
		"key of another":    {func(c *apple.Config) { c.KeyFile = f.OtherKey }, now, "is not the private key of the certificate TICKETD_APPLE_PASS_CERT"},
		"expired":           {func(c *apple.Config) { c.CertFile = f.Expired }, now, "TICKETD_APPLE_PASS_CERT (Pass Type ID: pass.test.ticketd) expired on"},
		"expired by clock":  {func(*apple.Config) {}, now.Add(72 * time.Hour), "expired on"},
		"not a certificate": {func(c *apple.Config) { c.WWDRFile = f.Key }, now, "TICKETD_APPLE_WWDR_CERT (" + f.Key + ") holds no certificate"},
		"not a key":         {func(c *apple.Config) { c.KeyFile = f.Cert }, now, "holds no PEM private key"},
		"wrong issuer":      {func(c *apple.Config) { c.WWDRFile = f.Cert }, now, "was not issued by TICKETD_APPLE_WWDR_CERT"},
		"other pass type":   {func(c *apple.Config) { c.PassTypeID = "pass.other" }, now, `is for pass type "pass.test.ticketd"`},
	} {
		c := f.Config("")
		tc.edit(&c)
		_, err := apple.Load(c, tc.now)
		if assert.ErrorIs(t, err, apple.ErrConfig, name) {
			assert.Contains(t, err.Error(), tc.want, name)
		}
	}
}

func TestAuthToken(t *testing.T) {
	tok := apple.AuthToken([]byte("k"), "s1")
	assert.True(t, apple.CheckAuth([]byte("k"), "s1", "ApplePass "+tok))
	assert.False(t, apple.CheckAuth([]byte("k"), "s2", "ApplePass "+tok), "another serial's token")
	assert.False(t, apple.CheckAuth([]byte("other"), "s1", "ApplePass "+tok))
	assert.False(t, apple.CheckAuth([]byte("k"), "s1", "Bearer "+tok))
	assert.False(t, apple.CheckAuth([]byte("k"), "s1", ""))
}

// TestAPNsPushOverHTTP2: the real client against a local HTTP/2 TLS
// server that asks for a client certificate: it presents the pass type
// certificate, speaks HTTP/2, names the topic, and maps 410 to
// ErrUnregistered.
func TestAPNsPushOverHTTP2(t *testing.T) {
	f := appletest.Make(t)
	s, err := apple.Load(f.Config(""), time.Now())
	require.NoError(t, err)
	var mu sync.Mutex
	var got []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		cn := ""
		if len(r.TLS.PeerCertificates) > 0 {
			cn = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		got = append(got, r.Proto+" "+r.URL.Path+" "+r.Header.Get("apns-topic")+" "+cn)
		if r.URL.Path == "/3/device/gone" {
			w.WriteHeader(410)
			return
		}
		w.WriteHeader(200)
	}))
	srv.EnableHTTP2 = true
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	p := apple.NewAPNs(s, srv.URL, &tls.Config{RootCAs: pool})
	require.NoError(t, p.Push(context.Background(), appletest.PassTypeID, "tok123"))
	assert.ErrorIs(t, p.Push(context.Background(), appletest.PassTypeID, "gone"), apple.ErrUnregistered)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"HTTP/2.0 /3/device/tok123 pass.test.ticketd Pass Type ID: pass.test.ticketd",
		"HTTP/2.0 /3/device/gone pass.test.ticketd Pass Type ID: pass.test.ticketd"}, got)
}

// BenchmarkBuild is the pkpass's service time per request: pass.json,
// manifest, RSA-2048 signature and zip.
func BenchmarkBuild(b *testing.B) {
	f := appletest.Make(b)
	s, err := apple.Load(f.Config("https://tickets.example/pass/apple"), time.Now())
	if err != nil {
		b.Fatal(err)
	}
	p := samplePass()
	b.ReportAllocs()
	var n int
	for b.Loop() {
		out, err := s.Build(p)
		if err != nil {
			b.Fatal(err)
		}
		n = len(out)
	}
	b.ReportMetric(float64(n), "bytes/pkpass")
}
