package money

import (
	"testing"

	"github.com/stretchr/testify/require"

	"ticketd/event"
)

// English writes the ISO code, a space and two decimals with thousands
// separators; Chinese the currency's sign (CLDR's zh), else the code;
// currencies without minor units show decimals only when there are some.
func TestFormat(t *testing.T) {
	for _, c := range []struct {
		lang string
		m    int64
		cur  string
		want string
	}{
		{"en", 1850, "EUR", "EUR 18.50"},
		{"en", 1805, "eur", "EUR 18.05"},
		{"en", 4000, "EUR", "EUR 40.00"},
		{"en", 0, "EUR", "EUR 0.00"},
		{"en", 121850, "USD", "USD 1,218.50"},
		{"en", 123456789, "GBP", "GBP 1,234,567.89"},
		{"en", 100000, "JPY", "JPY 1,000"},
		{"en", 100050, "JPY", "JPY 1,000.50"},
		{"en", -250, "EUR", "-EUR 2.50"},
		{"en", 1850, "", "18.50"},
		{"", 1850, "EUR", "EUR 18.50"},
		{"de", 1850, "EUR", "EUR 18.50"},
		{"zh-CN", 1850, "EUR", "€18.50"},
		{"zh-CN", 1850, "CNY", "¥18.50"},
		{"zh-CN", 121850, "USD", "US$1,218.50"},
		{"zh-CN", 1850, "CHF", "CHF 18.50"},
		{"zh-CN", 100000, "JPY", "JP¥1,000"},
	} {
		require.Equal(t, c.want, Format(event.Money(c.m), c.cur, c.lang), "%s %d %s", c.lang, c.m, c.cur)
	}
}
