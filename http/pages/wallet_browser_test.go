package pages_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app"
	"ticketd/wallet/apple/appletest"
)

// TestPassPageWalletButtonsInABrowser: in chromium, after the email gate,
// the pass page offers the PDF always and each wallet button exactly when
// that wallet is configured; no console or CSP problem on the way.
func TestPassPageWalletButtonsInABrowser(t *testing.T) {
	ctx, problems := hostedBrowser(t)
	rec := &recorder{}
	both, _ := withWallets(t, rec)
	af := appletest.Make(t)
	appleOnly := func(c *app.Config) {
		c.Wallet = app.WalletConfig{ApplePassTypeID: appletest.PassTypeID, AppleTeamID: appletest.TeamID,
			ApplePassCert: af.Cert, ApplePassKey: af.Key, AppleWWDRCert: af.WWDR}
	}
	for _, tc := range []struct {
		name          string
		opt           serviceOption
		apple, google bool
	}{
		{"none", func(*app.Config) {}, false, false},
		{"apple", appleOnly, true, false},
		{"both", both, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := pgStart(t, tc.opt)
			u := s.NewUnit("Buttons")
			ev := pgPublished(t, s, u.Secret, 0)
			reg := pgAPI(t, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/registrations", map[string]any{
				"email": "lin@example.com", "name": "Lin", "registrationTypeId": ev.TypeID})
			passURL := reg["passUrl"].(string)
			tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			require.NoError(t, chromedp.Do(tctx,
				chromedp.Navigate(passURL),
				chromedp.WaitVisible(chromedp.ID("gate-email")),
				chromedp.SendKeys(chromedp.ID("gate-email"), "lin@example.com"),
				chromedp.Submit(chromedp.ID("gate-email")),
				chromedp.WaitVisible(chromedp.ID("qr")),
				shot(t, "pass-wallets-"+tc.name+".png"),
			))
			has := func(id string) bool {
				ok, err := chromedp.Run(tctx, chromedp.Evaluate[bool](`(function(){var e=document.getElementById("`+id+`");return e!==null&&e.offsetParent!==null})()`))
				require.NoError(t, err)
				return ok
			}
			assert.True(t, has("ticket-pdf"), "the PDF is always offered")
			assert.Equal(t, tc.apple, has("apple-wallet"), "Apple Wallet button")
			assert.Equal(t, tc.google, has("google-wallet"), "Google Wallet button")
			href, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.getElementById("ticket-pdf").href`))
			require.NoError(t, err)
			assert.Equal(t, passURL+"/ticket.pdf", href)
		})
	}
	assert.Empty(t, problems())
}
