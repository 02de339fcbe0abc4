// Package bindtest holds the request types the tests of http/bind and of
// the HTTP server decode: one order-like body that uses every tag and
// kind of field bind knows, so both packages test the same shapes.
package bindtest

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"ticketd/event"
)

// Money is a json.Unmarshaler like the core's money: a number with at
// most two decimals, in cents.
type Money int64

// UnmarshalJSON reads a decimal amount.
func (m *Money) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil
	}
	if _, err := strconv.ParseFloat(s, 64); err != nil {
		return errors.New("must be a decimal amount")
	}
	if i := strings.IndexByte(s, '.'); i >= 0 && len(s)-i-1 > 2 {
		return &event.Error{Code: event.InvalidArgument, Message: "at most 2 decimals"}
	}
	f, _ := strconv.ParseFloat(s, 64)
	*m = Money(f*100 + 0.5)
	return nil
}

// Item is a line of an Order.
type Item struct {
	ItemType string `json:"itemType" v:"required,enum=registration_type|addon|bundle"`
	ItemID   string `json:"itemId" v:"required,minLen=1,maxLen=100"`
	Quantity int    `json:"quantity" v:"required,min=1,max=100"`
}

// Order is a body with every kind of field and rule.
type Order struct {
	EventID   string         `json:"-"`
	Email     string         `json:"email" v:"required,format=email,maxLen=320"`
	Name      string         `json:"name" v:"maxLen=200"`
	Items     []Item         `json:"items" v:"required,minItems=1,maxItems=3"`
	Capacity  *int           `json:"capacity" v:"nullable,min=0"`
	Amount    *Money         `json:"amount"`
	Locale    string         `json:"locale" v:"enum=en|zh-CN"`
	StartsAt  *time.Time     `json:"startsAt"`
	ReturnURL string         `json:"returnUrl" v:"format=uri,maxLen=2000"`
	Day       string         `json:"day" v:"format=date"`
	Free      bool           `json:"free"`
	Ratio     float64        `json:"ratio" v:"min=0,max=1"`
	Responses map[string]any `json:"responses"`
}
