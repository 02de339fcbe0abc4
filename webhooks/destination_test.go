package webhooks_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/persistence"
	"ticketd/webhooks"
)

// TestEndpointURLMustBePublicAtSave: decisions §23 at save, without and
// with TICKETD_WEBHOOK_ALLOW_PRIVATE. The refusal is ErrInvalid naming
// the url field and the address at fault.
func TestEndpointURLMustBePublicAtSave(t *testing.T) {
	strict, _ := open(t, webhooks.Config{})
	dev, _ := open(t, webhooks.Config{AllowPrivate: true})
	types := []string{webhooks.HookOrderPaid}
	for _, tc := range []struct {
		url, want string // want: "" accepted, else a part of the message
		dev       string // the same with AllowPrivate
	}{
		{"https://169.254.169.254/latest/meta-data", "169.254.169.254 is a link-local address", ""},
		{"https://10.1.2.3/in", "10.1.2.3 is a private address", ""},
		{"https://192.168.1.20:8443/in", "192.168.1.20 is a private address", ""},
		{"https://172.16.0.1/in", "172.16.0.1 is a private address", ""},
		{"https://[fc00::1]/in", "fc00::1 is a private address", ""},
		{"https://[fe80::1]/in", "fe80::1 is a link-local address", ""},
		{"https://[::1]:9000/in", "::1 is a loopback address", ""},
		{"https://127.0.0.1:9000/in", "127.0.0.1 is a loopback address", ""},
		{"https://[::ffff:10.0.0.1]/in", "10.0.0.1 is a private address", ""},
		{"https://100.64.0.1/in", "100.64.0.1 is a reserved, non-public address", ""},
		{"https://0.0.0.0/in", "0.0.0.0 is an unspecified address", ""},
		// A name is resolved: localhost is loopback (from /etc/hosts).
		{"https://localhost:9000/in", "localhost resolves to 127.0.0.1, a loopback address", ""},
		{"http://127.0.0.1:9000/in", "url: must be https", ""},
		{"http://localhost:9000/in", "url: must be https", ""},
		{"http://hooks.example.test/in", "url: must be https", "must be https (http only for localhost in development)"},
		{"http://10.0.0.1/in", "url: must be https", "must be https (http only for localhost in development)"},
		{"https://93.184.215.14/in", "", ""},
		// A name that does not resolve now is checked at each delivery.
		{"https://hooks.example.test/in", "", ""},
	} {
		for _, side := range []struct {
			name string
			w    *webhooks.Service
			want string
		}{{"strict", strict, tc.want}, {"allow-private", dev, tc.dev}} {
			_, err := side.w.Create("bu_1", webhooks.Input{URL: ptr(tc.url), EventTypes: types})
			if side.want == "" {
				assert.NoErrorf(t, err, "%s %s", side.name, tc.url)
				continue
			}
			if assert.ErrorIsf(t, err, webhooks.ErrInvalid, "%s %s", side.name, tc.url) {
				assert.Containsf(t, err.Error(), side.want, "%s %s", side.name, tc.url)
				assert.Containsf(t, err.Error(), "invalid endpoint: url: ", "names the field (%s)", tc.url)
			}
		}
	}
	// An update is checked the same way, and a refused one changes nothing.
	ep, err := strict.Create("bu_1", webhooks.Input{URL: ptr("https://93.184.215.14/in"), EventTypes: types})
	require.NoError(t, err)
	_, err = strict.Update("bu_1", ep.ID, webhooks.Input{URL: ptr("https://169.254.169.254/")})
	require.ErrorIs(t, err, webhooks.ErrInvalid)
	got, err := strict.Get("bu_1", ep.ID)
	require.NoError(t, err)
	assert.Equal(t, "https://93.184.215.14/in", got.URL)
}

// TestDeliveryRefusedUnlessAllowedAtDeliveryTime: endpoints saved while
// private destinations were allowed are refused at delivery once they are
// not (the check runs again at each delivery): a literal address before
// any connection, a name by the dialer on the address it resolved to.
// Nothing reaches the receivers; the log says refused. With the flag back
// on, the retries are delivered.
func TestDeliveryRefusedUnlessAllowedAtDeliveryTime(t *testing.T) {
	dir := t.TempDir()
	plain := newReceiver(t, 0)
	tlsCalls := make(chan struct{}, 10)
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		tlsCalls <- struct{}{}
		w.WriteHeader(204)
	}))
	t.Cleanup(tlsSrv.Close)
	u, err := url.Parse(tlsSrv.URL)
	require.NoError(t, err)
	byName := "https://localhost:" + u.Port() + "/in"

	openAt := func(allow bool) (*webhooks.Service, *persistence.Store) {
		st, err := persistence.Open(persistence.Options{Dir: dir})
		require.NoError(t, err)
		cfg := webhooks.Config{AllowPrivate: allow, BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond,
			PollInterval: 5 * time.Millisecond, Timeout: 2 * time.Second}
		if allow {
			// The receiver's self-signed certificate does not name
			// localhost.
			cfg.Client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		}
		w, err := webhooks.New(cfg, st, nil)
		require.NoError(t, err)
		return w, st
	}
	w, st := openAt(true)
	lit, err := w.Create("bu_1", webhooks.Input{URL: ptr(plain.srv.URL), EventTypes: []string{webhooks.HookOrderPaid}})
	require.NoError(t, err)
	named, err := w.Create("bu_1", webhooks.Input{URL: ptr(byName), EventTypes: []string{webhooks.HookOrderPaid}})
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, st.Close())

	w, st = openAt(false)
	w.Start()
	enqueue(t, st, "0000000000000001-0000", "bu_1", webhooks.HookOrderPaid)
	w.Wake()
	refusedOf := func(id string) []webhooks.Delivery {
		ds, err := w.Deliveries("bu_1", id)
		require.NoError(t, err)
		var out []webhooks.Delivery
		for _, d := range ds {
			if d.Refused {
				out = append(out, d)
			}
		}
		return out
	}
	require.Eventually(t, func() bool { return len(refusedOf(lit.ID)) > 0 && len(refusedOf(named.ID)) > 0 },
		10*time.Second, 5*time.Millisecond)
	d := refusedOf(lit.ID)[0]
	assert.False(t, d.Succeeded)
	assert.Zero(t, d.StatusCode)
	assert.Contains(t, d.Error, "refused, not sent: http is not https")
	d = refusedOf(named.ID)[0]
	assert.Contains(t, d.Error, "refused, not sent: 127.0.0.1 is a loopback address",
		"the dialer saw the address the name resolved to")
	assert.Empty(t, plain.got(), "nothing sent to the literal address")
	assert.Empty(t, tlsCalls, "nothing sent to the name")
	require.NoError(t, w.Close())
	require.NoError(t, st.Close())

	// With the flag, the same tasks are delivered.
	w, st = openAt(true)
	w.Start()
	t.Cleanup(func() { _ = w.Close(); _ = st.Close() })
	w.Wake()
	require.Eventually(t, func() bool { return len(plain.got()) == 1 && len(tlsCalls) == 1 }, 10*time.Second, 5*time.Millisecond)
	// The receiver counts the request before the deliverer logs its
	// outcome (after the answer): wait for the log too.
	var ds []webhooks.Delivery
	require.Eventually(t, func() bool {
		var err error
		ds, err = w.Deliveries("bu_1", named.ID)
		require.NoError(t, err)
		return len(ds) > 0 && !ds[0].Refused
	}, 10*time.Second, 5*time.Millisecond)
	assert.True(t, ds[0].Succeeded, "newest first: %+v", ds[0])
	assert.False(t, strings.HasPrefix(ds[0].Error, "refused"))
}
