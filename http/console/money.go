package console

import (
	"ticketd/event"
	"ticketd/internal/money"
)

func init() {
	// money writes an amount as the hosted pages write it in English
	// ("EUR 1,218.50"): the console and the pages share one formatter.
	funcs["money"] = func(m event.Money, currency string) string { return money.Format(m, currency, "en") }
}
