package shell

import (
	"strings"
	"unicode"

	"ticketd/event"
	"ticketd/internal/money"
)

func init() {
	// money writes an amount as the hosted pages write it in English: as
	// the event currency's own locale does ("1.218,50 €", "$1,218.50",
	// "¥1,218"); the console and the pages share one formatter. CSV
	// exports keep plain decimals ("1218.50") for spreadsheets and scripts.
	funcs["money"] = func(m event.Money, currency string) string { return money.Format(m, currency, "en") }
}

// MoneyField is a typed amount as the JSON number it stands for: the forms
// people write in are accepted, a decimal comma ("12,50", "1.234,50") as
// well as a point ("1,234.50"), with or without a currency sign or code and
// thousands separators (spaces, apostrophes). What is not an amount is
// passed on as typed, so the binder names the field.
func MoneyField(s string) any {
	t := strings.Map(func(r rune) rune {
		switch {
		case r >= '0' && r <= '9', r == ',', r == '.', r == '-':
			return r
		case r == ' ', r == '\u00a0', r == '\u202f', r == '\'', r == '’', unicode.IsLetter(r), unicode.Is(unicode.Sc, r):
			return -1 // spaces, thousands marks, a currency code or sign
		}
		return r
	}, s)
	if t == "" {
		return s
	}
	lastComma, lastDot := strings.LastIndexByte(t, ','), strings.LastIndexByte(t, '.')
	switch {
	case lastComma >= 0 && lastDot >= 0:
		// Both: the last one written is the decimal mark.
		if lastComma > lastDot {
			t = strings.ReplaceAll(t, ".", "")
			t = strings.Replace(t, ",", ".", 1)
		} else {
			t = strings.ReplaceAll(t, ",", "")
		}
	case lastComma >= 0:
		// A comma alone: one followed by exactly three digits groups
		// thousands ("1,250"), otherwise it is the decimal mark ("12,5").
		if strings.Count(t, ",") > 1 || len(t)-lastComma-1 == 3 {
			t = strings.ReplaceAll(t, ",", "")
		} else {
			t = strings.Replace(t, ",", ".", 1)
		}
	case strings.Count(t, ".") > 1:
		t = strings.ReplaceAll(t, ".", "") // "1.250.000"
	}
	return JSONNumberOr(t)
}

// refundedOf is what the order's refunds gave back or are giving back
// (pending and succeeded; a failed one gave nothing).
func refundedOf(o event.Order) event.Money {
	var n event.Money
	for _, r := range o.Refunds {
		if r.Status != event.RefundFailed {
			n += r.Amount
		}
	}
	return n
}

// orderStatus is an order's status as the organizer reads it: a paid
// order with part of it refunded says so.
func orderStatus(o event.Order) string {
	if o.Status == "paid" {
		if back := refundedOf(o); back > 0 && back < o.TotalAmount {
			return "paid, partly refunded"
		}
	}
	return statusText(o.Status)
}

func init() {
	funcs["refunded"] = refundedOf
	funcs["net"] = func(o event.Order) event.Money { return o.TotalAmount - refundedOf(o) }
	funcs["orderStatus"] = orderStatus
}
