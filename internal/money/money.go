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

// nbsp joins a sign written after an amount to it, so a narrow column
// never leaves "€" alone on a line.
const nbsp = "\u00a0"

// style is how a currency's home locale writes an amount: its sign, before
// or after the number, and its group and decimal marks (CLDR).
type style struct {
	sign         string
	after        bool   // "1.234,50 €" rather than "$1,234.50"
	group, point string // thousands and decimal marks
}

// styles are the currencies' own ways of writing money. EUR has no single
// home: it is written as Germany, Austria, Italy and Spain write it
// ("1.234,50 €"), the most common form in the euro area. A currency not
// listed keeps the ISO code and the English marks ("CHF 1,234.50" is the
// exception: Switzerland's own "CHF 1’234.50").
var styles = map[string]style{
	"EUR": {sign: "€", after: true, group: ".", point: ","},
	"USD": {sign: "$", group: ",", point: "."},
	"GBP": {sign: "£", group: ",", point: "."},
	"JPY": {sign: "¥", group: ",", point: "."},
	"CNY": {sign: "¥", group: ",", point: "."},
	"INR": {sign: "₹", group: ",", point: "."},
	"KRW": {sign: "₩", group: ",", point: "."},
	"CAD": {sign: "CA$", group: ",", point: "."},
	"AUD": {sign: "A$", group: ",", point: "."},
	"NZD": {sign: "NZ$", group: ",", point: "."},
	"CHF": {sign: "CHF" + nbsp, group: "’", point: "."},
	"SEK": {sign: "kr", after: true, group: nbsp, point: ","},
	"NOK": {sign: "kr", after: true, group: nbsp, point: ","},
	"DKK": {sign: "kr.", after: true, group: ".", point: ","},
	"PLN": {sign: "zł", after: true, group: nbsp, point: ","},
	"CZK": {sign: "Kč", after: true, group: nbsp, point: ","},
	"BRL": {sign: "R$" + nbsp, group: ".", point: ","},
}

// Format writes amount m (minor units) of currency for a page in language
// lang (a BCP 47 tag). In Simplified Chinese, CLDR's zh signs before the
// amount ("€1,218.50", "¥18.50"; the code and a space for a currency
// without a sign). In every other language the amount is written as the
// currency's own locale writes it: "1.234,50 €", "$1,234.50", "£1,234.50",
// "¥1,234" (a currency without minor units shows decimals only when it
// has some); a currency without a listed style as "SEK 1,234.50" would
// be, the ISO code, a space and English marks. No currency: the bare
// amount with English marks. Machine-readable exports do not use this:
// they write plain decimals ("1234.50").
func Format(m event.Money, currency, lang string) string {
	cur := strings.ToUpper(strings.TrimSpace(currency))
	st, ok := styles[cur]
	switch {
	case lang == "zh" || strings.HasPrefix(lang, "zh-"):
		st = style{sign: cur + " ", group: ",", point: "."}
		if sym, ok := zhSymbols[cur]; ok {
			st.sign = sym
		}
	case !ok:
		st = style{sign: cur + " ", group: ",", point: "."}
	}
	if cur == "" {
		st.sign = ""
	}
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
	if !st.after {
		b.WriteString(st.sign)
	}
	for i, r := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteString(st.group)
		}
		b.WriteRune(r)
	}
	if c := u % 100; c != 0 || !zeroDecimal[cur] {
		b.WriteString(st.point)
		b.WriteByte(byte('0' + c/10))
		b.WriteByte(byte('0' + c%10))
	}
	if st.after && st.sign != "" {
		b.WriteString(nbsp + st.sign)
	}
	return b.String()
}
