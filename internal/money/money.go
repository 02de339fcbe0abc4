package money

import (
	"strconv"
	"strings"

	"ticketd/event"
)

// zeroDecimal are the currencies written without minor units (ISO 4217
// exponent 0): an amount of theirs shows decimals only when it has some.
var zeroDecimal = map[string]bool{"JPY": true, "KRW": true, "VND": true, "CLP": true, "ISK": true, "PYG": true,
	"UGX": true, "XAF": true, "XOF": true, "KMF": true, "GNF": true, "RWF": true, "BIF": true, "DJF": true, "VUV": true, "XPF": true}

// zhSymbols are the currency signs CLDR's Simplified Chinese data writes
// before an amount; other currencies keep their ISO code.
var zhSymbols = map[string]string{"CNY": "¥", "EUR": "€", "USD": "US$", "GBP": "£", "JPY": "JP¥", "HKD": "HK$", "TWD": "NT$",
	"KRW": "₩", "AUD": "A$", "CAD": "CA$", "INR": "₹", "NZD": "NZ$", "MXN": "MX$", "BRL": "R$", "ILS": "₪", "VND": "₫"}

// Format writes amount m (minor units) of currency the way language lang
// (a BCP 47 tag) writes money: in English, and any language without its
// own rule, the ISO code, a space and the amount with two decimals and
// thousands separators ("EUR 1,218.50"); in Chinese the currency's sign
// before the amount ("€1,218.50", "¥18.50"), the code and a space for a
// currency without a sign ("CHF 18.50"). No currency: the bare amount.
func Format(m event.Money, currency, lang string) string {
	cur := strings.ToUpper(strings.TrimSpace(currency))
	neg := m < 0
	u := uint64(m)
	if neg {
		u = -u
	}
	whole := strconv.FormatUint(u/100, 10)
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	prefix := cur + " "
	if lang == "zh" || strings.HasPrefix(lang, "zh-") {
		if sym, ok := zhSymbols[cur]; ok {
			prefix = sym
		}
	}
	if cur == "" {
		prefix = ""
	}
	b.WriteString(prefix)
	for i, r := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if c := u % 100; c != 0 || !zeroDecimal[cur] {
		b.WriteByte('.')
		b.WriteByte(byte('0' + c/10))
		b.WriteByte(byte('0' + c%10))
	}
	return b.String()
}
