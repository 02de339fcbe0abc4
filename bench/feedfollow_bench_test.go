package bench

import (
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"ticketd/http/api"
)

// benchPage is a page of 1,000 order changes after from, as the service
// writes it.
func benchPage(eid string, from uint64) []byte {
	order := `{"id":"ord_01m80je09pzy02793r04zjh8hp","eventId":"evt_01m80je06d7aca5stxyc0g1dea","orderNumber":"01m80je06d7aca5stxyc0g1dea-BT3RGB81","status":"open","email":"b1@x.com","name":"B","items":[{"itemType":"registration_type","itemId":"tt_01m80je08a0hs5x214cz7we1b7","name":"GA","quantity":1,"unitPriceAmount":0,"amount":0}],"totalAmount":0,"currency":"USD","alreadyRegistered":false,"registrationId":null,"redemptionCode":null,"responses":null,"holdExpiresAt":"2026-11-22T03:02:43Z","paymentId":null,"orderUrl":"http://127.0.0.1:18931/orders/01m80je06d7aca5stxyc0g1dea-BT3RGB81","checkoutUrl":"http://127.0.0.1:18931/orders/01m80je06d7aca5stxyc0g1dea-BT3RGB81/checkout","paymentUrl":null,"successUrl":null,"cancelUrl":null,"createdAt":"2026-11-22T02:47:43Z","updatedAt":"2026-11-22T02:47:43Z"}`
	cur := func(seq uint64) string {
		return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "f1:%s:%d", eid, seq))
	}
	p := api.FeedPage{Data: []api.FeedChange{}, NextCursor: cur(from + 1000)}
	at := time.Now()
	for i := uint64(1); i <= 1000; i++ {
		p.Data = append(p.Data, api.FeedChange{Cursor: cur(from + i), Seq: from + i, Type: "order.created", OccurredAt: api.FeedTime(at), Object: api.FeedObject(order)})
	}
	return p.AppendJSON(nil)
}

// BenchmarkFollowerTake: a follower's check of a page of 1,000 orders
// (ns/op per page; the generator pays it per follower).
func BenchmarkFollowerTake(b *testing.B) {
	const eid = "evt_01m80je06d7aca5stxyc0g1dea"
	pg := benchPage(eid, 0)
	b.SetBytes(int64(len(pg)))
	for b.Loop() {
		f := &feedFollower{eid: eid, lags: make([]float64, 0, 1000)}
		if _, err := f.take(pg, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}
