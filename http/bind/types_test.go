package bind

// The request types of the binder tests, shaped like the core's commands.

import "ticketd/http/bind/bindtest"

type (
	toyMoney = bindtest.Money
	toyItem  = bindtest.Item
	toyOrder = bindtest.Order
)

type toyQuery struct {
	ListQuery
	Status string `query:"status" v:"enum=open|closed"`
	Big    *bool  `query:"big"`
}

const goodOrder = `{"email":"ann@example.com","items":[{"itemType":"registration_type","itemId":"tt_1","quantity":1}]}`
