package console_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app"
	"ticketd/app/apptest"
	"ticketd/wallet/apple/appletest"
)

// TestHomeSaysWhichWalletsAreConfigured: the operator's console home
// names each wallet as configured or not, with its pass type and
// certificate expiry, and never shows a key.
func TestHomeSaysWhichWalletsAreConfigured(t *testing.T) {
	af := appletest.Make(t)
	s := apptest.Start(t, func(c *app.Config) {
		c.Wallet = app.WalletConfig{ApplePassTypeID: appletest.PassTypeID, AppleTeamID: appletest.TeamID,
			ApplePassCert: af.Cert, ApplePassKey: af.Key, AppleWWDRCert: af.WWDR}
	})
	p := operator(t, s).get("/console")
	require.Equal(t, 200, p.Status)
	assert.Contains(t, p.Body, `<li id="wallet-apple">Apple Wallet: configured (pass type `+appletest.PassTypeID+`, team `+appletest.TeamID+`, certificate valid until `)
	assert.Contains(t, p.Body, `<li id="wallet-google">Google Wallet: not configured</li>`)
	assert.Contains(t, p.Body, "PDF ticket: always offered")
	key, err := os.ReadFile(af.Key)
	require.NoError(t, err)
	for _, line := range strings.Split(string(key), "\n")[1:3] {
		assert.NotContains(t, p.Body, line, "no key material")
	}
	assert.NotContains(t, p.Body, "PRIVATE KEY")
}
