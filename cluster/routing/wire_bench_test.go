package routing

import (
	"testing"
	"time"

	"ticketd/event"
)

// BenchmarkWireOrder: the CPU of a forwarded order's command and answer
// through the wire codec, both ends (encode and decode).
func BenchmarkWireOrder(b *testing.B) {
	name := "Ann"
	now := event.At(time.Now())
	o := event.Order{ID: "ord_01HXYZ", EventID: "evt_01HXYZ", OrderNumber: "A-1234", Status: "open", Email: "a@b.io", Name: &name,
		Items:       []event.OrderItemView{{ItemType: "registration_type", ItemID: "tt_1", Name: "GA", Quantity: 1, UnitPriceAmount: 5000, Amount: 5000}},
		TotalAmount: 5000, Currency: "EUR", CreatedAt: now, UpdatedAt: now, HoldExpiresAt: &now, OrderURL: "https://x/o/1"}
	cmd := event.PlaceOrder{Email: "p1@x.io", Items: []event.OrderItem{{ItemType: event.ItemRegistrationType, ItemID: "tt_1", Quantity: 1}}, Storefront: true}
	b.Run("order", func(b *testing.B) {
		for b.Loop() {
			body, err := encodeResp(&wireResp{Result: o})
			if err != nil {
				b.Fatal(err)
			}
			var r wireResp
			if err := decodeResp(body, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("placeOrder", func(b *testing.B) {
		for b.Loop() {
			body, err := encodeReq(&wireReq{EventID: "evt_1", Cmd: event.Storefront{Cmd: cmd}})
			if err != nil {
				b.Fatal(err)
			}
			var r wireReq
			if err := decodeReq(body, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
