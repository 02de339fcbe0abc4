package money

import (
	"testing"

	"github.com/stretchr/testify/require"

	"ticketd/event"
)

// Every language but Chinese writes the currency as its own locale does
// (EUR "1.234,50 €", USD "$1,234.50", JPY without decimals), an unlisted
// currency with its ISO code; Chinese the currency's sign (CLDR's zh),
// else the code; currencies without minor units show decimals only when
// there are some.
func TestFormat(t *testing.T) {
	for _, c := range []struct {
		lang string
		m    int64
		cur  string
		want string
	}{
		{"en", 1850, "EUR", "18,50\u00a0€"},
		{"en", 1805, "eur", "18,05\u00a0€"},
		{"en", 0, "EUR", "0,00\u00a0€"},
		{"en", 123450, "EUR", "1.234,50\u00a0€"},
		{"en", 121850, "USD", "$1,218.50"},
		{"en", 123456789, "GBP", "£1,234,567.89"},
		{"en", 123400, "JPY", "¥1,234"},
		{"en", 100050, "JPY", "¥1,000.50"},
		{"en", 123450, "CHF", "CHF\u00a01’234.50"},
		{"en", 123450, "SEK", "1\u00a0234,50\u00a0kr"},
		{"en", 123450, "HUF", "HUF 1,234.50"},
		{"en", -250, "EUR", "-2,50\u00a0€"},
		{"en", -250, "USD", "-$2.50"},
		{"en", 1850, "", "18.50"},
		{"", 1850, "EUR", "18,50\u00a0€"},
		{"de", 121850, "USD", "$1,218.50"},
		{"zh-CN", 1850, "EUR", "€18.50"},
		{"zh-CN", 1850, "CNY", "¥18.50"},
		{"zh-CN", 121850, "USD", "US$1,218.50"},
		{"zh-CN", 1850, "CHF", "CHF 18.50"},
		{"zh-CN", 100000, "JPY", "JP¥1,000"},
	} {
		require.Equal(t, c.want, Format(event.Money(c.m), c.cur, c.lang), "%s %d %s", c.lang, c.m, c.cur)
	}
}
