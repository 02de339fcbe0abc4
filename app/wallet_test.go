package app_test

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app"
	"ticketd/wallet/apple/appletest"
	"ticketd/wallet/google/googletest"
)

// TestBadWalletConfigRefusedAtStart: the real Main refuses to open with
// wallet credentials that cannot work, naming the setting at fault, and
// opens with good ones.
func TestBadWalletConfigRefusedAtStart(t *testing.T) {
	af := appletest.Make(t)
	gk, _ := googletest.Make(t)
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte("{not json"), 0o600))
	good := app.WalletConfig{ApplePassTypeID: appletest.PassTypeID, AppleTeamID: appletest.TeamID, ApplePassCert: af.Cert,
		ApplePassKey: af.Key, AppleWWDRCert: af.WWDR, GoogleIssuerID: googletest.IssuerID, GoogleKey: gk}
	for name, tc := range map[string]struct {
		edit func(w *app.WalletConfig)
		want string
	}{
		"missing file":  {func(w *app.WalletConfig) { w.ApplePassCert = filepath.Join(t.TempDir(), "gone.pem") }, "TICKETD_APPLE_PASS_CERT: open"},
		"key mismatch":  {func(w *app.WalletConfig) { w.ApplePassKey = af.OtherKey }, "is not the private key of the certificate"},
		"expired":       {func(w *app.WalletConfig) { w.ApplePassCert = af.Expired }, "expired on"},
		"half apple":    {func(w *app.WalletConfig) { w.AppleWWDRCert = "" }, "TICKETD_APPLE_WWDR_CERT not set"},
		"bad JSON key":  {func(w *app.WalletConfig) { w.GoogleKey = bad }, "TICKETD_GOOGLE_WALLET_KEY (" + bad + "): not a JSON key"},
		"missing key":   {func(w *app.WalletConfig) { w.GoogleKey = filepath.Join(t.TempDir(), "none.json") }, "TICKETD_GOOGLE_WALLET_KEY: open"},
		"half google":   {func(w *app.WalletConfig) { w.GoogleIssuerID = "" }, "must both be set"},
		"good settings": {func(*app.WalletConfig) {}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := app.DefaultConfig()
			cfg.Addr, cfg.DataDir, cfg.AdminToken = "127.0.0.1:0", t.TempDir(), "adm_wallet_test_token_01"
			cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			cfg.Wallet = good
			tc.edit(&cfg.Wallet)
			m := app.NewMain(cfg, io.Discard)
			err := m.Open()
			if tc.want == "" {
				require.NoError(t, err)
				require.NoError(t, m.Close())
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "PRIVATE KEY", "no key material in the message")
		})
	}
}
