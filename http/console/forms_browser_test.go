package console_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
)

// TestFormBuilderInABrowser: in chromium at 390 px, the operator builds an
// event with a paid ticket type and a registration form (a required text
// question and a required choice, a third removed with the keyboard
// through its confirmation), publishes both, and a buyer at the hosted
// checkout is asked the form's questions; the answers reach the
// registration.
func TestFormBuilderInABrowser(t *testing.T) {
	ctx, problems := consoleBrowser(t)
	s := apptest.Start(t)
	u := s.NewUnit("Form Makers")
	tctx, cancel := context.WithTimeout(ctx, 120*time.Second)
	defer cancel()
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(tctx, chromedp.Text(chromedp.CSS(sel)))
		require.NoError(t, err)
		return strings.TrimSpace(v)
	}
	addQuestion := func(label, kind, options string, required bool, wait string) chromedp.Action[chromedp.Void] {
		steps := []chromedp.Action[chromedp.Void]{
			chromedp.Click(byID("new-question")),
			chromedp.WaitVisible(byID("q-new-label")),
			chromedp.SendKeys(byID("q-new-label"), label),
			chromedp.SetValue(byID("q-new-type"), kind),
		}
		if options != "" {
			steps = append(steps, chromedp.SendKeys(byID("q-new-options"), options))
		}
		if required {
			steps = append(steps, chromedp.Click(byID("q-new-required")))
		}
		steps = append(steps, chromedp.Click(byID("q-new-submit")), chromedp.WaitVisible(byID(wait)))
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			for _, step := range steps {
				if _, err := step(ctx, tg); err != nil {
					return err
				}
			}
			return nil
		})
	}

	require.NoError(t, chromedp.Do(tctx,
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(s.URL+"/console"),
		chromedp.WaitVisible(byID("token")),
		chromedp.SendKeys(byID("token"), s.Admin),
		chromedp.Click(byID("operator-submit")),
		chromedp.WaitVisible(byID("unit-name")),
		chromedp.Navigate(s.URL+"/console/units/"+u.ID),
		chromedp.WaitVisible(byID("ev-name")), // an empty unit shows the form open
		chromedp.SendKeys(byID("ev-name"), "Form Night"),
		chromedp.SetValue(byID("ev-tz"), "Europe/Paris"),
		chromedp.SetValue(byID("ev-start"), "2030-06-01T18:00"),
		chromedp.Submit(byID("ev-name")),
		chromedp.WaitVisible(byID("add-tt")),
		chromedp.Click(byID("add-tt")),
		chromedp.WaitVisible(byID("tt-name")),
		chromedp.SendKeys(byID("tt-name"), "General"),
		chromedp.SendKeys(byID("tt-price"), "25"),
		chromedp.Submit(byID("tt-name")),
		chromedp.WaitVisible(byID("types")),
		chromedp.Click(chromedp.CSS(`nav[aria-label="Event"] a:first-child`)),
		chromedp.WaitVisible(chromedp.CSS(`input[id^="cap-"]`)),
		chromedp.Click(byID("publish")),
		chromedp.WaitNotPresent(byID("publish")),
		chromedp.Click(chromedp.CSS(`nav[aria-label="Event setup"] a[href$="/forms"]`)),
		chromedp.WaitVisible(byID("new-question")),
		addQuestion("Company", "text", "", true, "question-company"),
		addQuestion("T-shirt size", "select", "S\nM\nL", true, "question-t_shirt_size"),
		addQuestion("Remove me", "date", "", false, "question-remove_me"),
		// Removed with the keyboard alone: the confirmation opens with
		// Enter, and its button takes Enter too.
		chromedp.Focus(byID("remove-remove_me")),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(byID("remove-confirm-remove_me")),
		shot(t, "forms-01-remove-confirm.png"),
		chromedp.Focus(byID("remove-confirm-remove_me")),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitNotPresent(byID("question-remove_me")),
		chromedp.Click(byID("publish-form")),
		chromedp.WaitNotPresent(byID("publish-form")),
		shot(t, "forms-02-builder.png"),
	))
	require.Equal(t, "published", text("#form-status"))
	loc, err := chromedp.Run(tctx, chromedp.Location())
	require.NoError(t, err)
	eventID := strings.Split(strings.TrimPrefix(loc, s.URL+"/console/events/"), "/")[0]
	typeID := typeOf(t, s, eventID)

	// The buyer: the hosted checkout asks the form's questions.
	st, cs := api(t, s, u.Secret, "POST", "/v1/events/"+eventID+"/checkout-sessions", map[string]any{
		"items": []map[string]any{{"itemType": "registration_type", "itemId": typeID, "quantity": 1}},
		"email": "dana@example.com", "locale": "en"})
	require.Equal(t, 201, st, "%v", cs)
	require.NoError(t, chromedp.Do(tctx,
		chromedp.Navigate(cs["url"].(string)),
		chromedp.WaitVisible(byID("q-company")),
		chromedp.WaitVisible(byID("q-t_shirt_size")),
		shot(t, "forms-03-checkout-asks.png"),
	))
	require.Equal(t, "Company*", text(`label[for="q-company"]`))
	require.Equal(t, "T-shirt size*", text(`label[for="q-t_shirt_size"]`))
	require.NoError(t, chromedp.Do(tctx,
		chromedp.SendKeys(byID("co-name"), "Dana Doe"),
		chromedp.SendKeys(byID("q-company"), "Gopher Ltd"),
		chromedp.SetValue(byID("q-t_shirt_size"), "M"),
		chromedp.Click(byID("co-submit")),
		chromedp.WaitVisible(byID("pay-button")),
		chromedp.Click(byID("pay-button")),
		chromedp.WaitVisible(byID("gate-email")),
	))
	st, regs := api(t, s, u.Secret, "GET", "/v1/events/"+eventID+"/registrations", nil)
	require.Equal(t, 200, st)
	data := regs["data"].([]any)
	require.Len(t, data, 1)
	resp := data[0].(map[string]any)["responses"].(map[string]any)
	require.Equal(t, "Gopher Ltd", resp["company"])
	require.Equal(t, "M", resp["t_shirt_size"])
	require.Empty(t, problems(), "console errors or CSP violations")
}
