package bind

// The request types of the binder tests, shaped like the core's commands.

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"ticketd/event"
)

// toyMoney is a json.Unmarshaler like the core's money: a number with at
// most two decimals.
type toyMoney int64

func (m *toyMoney) UnmarshalJSON(b []byte) error {
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
	*m = toyMoney(f*100 + 0.5)
	return nil
}

type toyItem struct {
	ItemType string `json:"itemType" v:"required,enum=registration_type|addon|bundle"`
	ItemID   string `json:"itemId" v:"required,minLen=1,maxLen=100"`
	Quantity int    `json:"quantity" v:"required,min=1,max=100"`
}

type toyOrder struct {
	EventID   string         `json:"-"`
	Email     string         `json:"email" v:"required,format=email,maxLen=320"`
	Name      string         `json:"name" v:"maxLen=200"`
	Items     []toyItem      `json:"items" v:"required,minItems=1,maxItems=3"`
	Capacity  *int           `json:"capacity" v:"nullable,min=0"`
	Amount    *toyMoney      `json:"amount"`
	Locale    string         `json:"locale" v:"enum=en|zh-CN"`
	StartsAt  *time.Time     `json:"startsAt"`
	ReturnURL string         `json:"returnUrl" v:"format=uri,maxLen=2000"`
	Day       string         `json:"day" v:"format=date"`
	Free      bool           `json:"free"`
	Ratio     float64        `json:"ratio" v:"min=0,max=1"`
	Responses map[string]any `json:"responses"`
}

type toyQuery struct {
	ListQuery
	Status string `query:"status" v:"enum=open|closed"`
	Big    *bool  `query:"big"`
}

const goodOrder = `{"email":"ann@example.com","items":[{"itemType":"registration_type","itemId":"tt_1","quantity":1}]}`
