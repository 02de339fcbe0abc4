package pages

import (
	"io/fs"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"ticketd/event"
)

// TestPagesMessagesComplete: every key a template or page handler uses
// exists in both locales, and both locales have the same keys.
func TestPagesMessagesComplete(t *testing.T) {
	ms := newMessages()
	require.Len(t, ms, 2)
	for k := range ms[localeEN] {
		require.Contains(t, ms[localeZH], k, "zh-CN lacks %q", k)
	}
	for k := range ms[localeZH] {
		require.Contains(t, ms[localeEN], k, "en lacks %q", k)
	}
	used := map[string]bool{}
	re := regexp.MustCompile(`\.T "([a-z_.]+)"`)
	require.NoError(t, fs.WalkDir(templateFS, "templates", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := templateFS.ReadFile(path)
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			used[m[1]] = true
		}
		return err
	}))
	reGo := regexp.MustCompile(`\.T\("([a-z_.]+)"\)`)
	for _, f := range []string{"pages.go", "pages_flow.go", "pages_gate.go"} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range reGo.FindAllStringSubmatch(string(b), -1) {
			used[m[1]] = true
		}
	}
	for _, s := range []string{"open", "awaiting_payment", "paid", "cancelled", "expired"} {
		used["order.status."+s] = true
	}
	for _, s := range []string{"pending", "confirmed", "waitlisted", "rejected", "cancelled"} {
		used["reg.status."+s] = true
	}
	require.Greater(t, len(used), 40)
	for k := range used {
		require.Contains(t, ms[localeEN], k, "missing message %q", k)
	}
}

func TestPickLocale(t *testing.T) {
	for _, c := range []struct{ explicit, accept, want string }{
		{"zh-CN", "en-US", "zh-CN"},
		{"en", "zh-CN", "en"},
		{"", "zh-CN,zh;q=0.9,en;q=0.8", "zh-CN"},
		{"", "zh-TW", "zh-CN"},
		{"", "fr-FR, en;q=0.5", "en"},
		{"", "de", "en"},
		{"", "", "en"},
		{"fr", "", "en"},
	} {
		require.Equal(t, c.want, pickLocale(c.explicit, c.accept), "%+v", c)
	}
}

// TestMoneyAsTheLocaleWritesIt: English writes the amount as the
// currency's own locale does ("18,50 €", "$1,218.50"); Simplified Chinese the
// currency's sign (CLDR's zh), else the code; currencies without minor
// units show decimals only when there are some.
func TestMoneyAsTheLocaleWritesIt(t *testing.T) {
	ms := newMessages()
	en, zh := ms.loc(localeEN), ms.loc(localeZH)
	for _, c := range []struct {
		l    loc
		m    int64
		cur  string
		want string
	}{
		{en, 1850, "EUR", "18,50\u00a0€"},
		{en, 1805, "eur", "18,05\u00a0€"},
		{en, 4000, "EUR", "40,00\u00a0€"},
		{en, 121850, "USD", "$1,218.50"},
		{en, 123456789, "GBP", "£1,234,567.89"},
		{en, 100000, "JPY", "¥1,000"},
		{en, -250, "EUR", "-2,50\u00a0€"},
		{zh, 1850, "EUR", "€18.50"},
		{zh, 1850, "CNY", "¥18.50"},
		{zh, 121850, "USD", "US$1,218.50"},
		{zh, 1850, "CHF", "CHF 18.50"},
		{zh, 100000, "JPY", "JP¥1,000"},
	} {
		require.Equal(t, c.want, c.l.Money(event.Money(c.m), c.cur), "%s %d %s", c.l.Lang, c.m, c.cur)
	}
}
