package mail

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTicketEmailOffersPDFAndConfiguredWallets: a ticket email links the
// PDF always and each wallet only when it is configured (decisions §21).
func TestTicketEmailOffersPDFAndConfiguredWallets(t *testing.T) {
	tm := paidTicket(t)
	tm.PassURL = "https://tickets.example.com/pass/evt_1.TOKEN0123"
	for _, tc := range []struct {
		apple, google bool
	}{{false, false}, {true, false}, {false, true}, {true, true}} {
		m, err := New(Config{From: "Tickets <tickets@example.com>", AppleWallet: tc.apple, GoogleWallet: tc.google}, openStore(t))
		require.NoError(t, err)
		msg, err := m.Render(tm)
		require.NoError(t, err)
		var b bytes.Buffer
		_, err = msg.WriteTo(&b)
		require.NoError(t, err)
		got, err := ParseMessage(b.Bytes())
		require.NoError(t, err)
		for part, body := range map[string]string{"text": got.Text, "html": got.HTML} {
			require.Contains(t, body, tm.PassURL+"/ticket.pdf", part)
			check := func(on bool, s string) {
				if on {
					require.Contains(t, body, s, "%s %+v", part, tc)
				} else {
					require.NotContains(t, body, s, "%s %+v", part, tc)
				}
			}
			check(tc.apple, tm.PassURL+"/wallet.pkpass")
			check(tc.google, tm.PassURL+"/google-wallet")
		}
	}
}
