package api

import (
	"testing"
	"time"

	"ticketd/actors/feed"
	"ticketd/event"
	thttp "ticketd/http"
)

// benchOrder is about the size of a placed order's JSON (the drop's
// feed is mostly these).
const benchOrder = `{"id":"ord_01m80je09pzy02793r04zjh8hp","eventId":"evt_01m80je06d7aca5stxyc0g1dea","orderNumber":"01m80je06d7aca5stxyc0g1dea-BT3RGB81","status":"open","email":"b1@x.com","name":"B","items":[{"itemType":"registration_type","itemId":"tt_01m80je08a0hs5x214cz7we1b7","name":"GA","quantity":1,"unitPriceAmount":0,"amount":0}],"totalAmount":0,"currency":"USD","alreadyRegistered":false,"registrationId":null,"redemptionCode":null,"responses":null,"holdExpiresAt":"2026-11-22T03:02:43Z","paymentId":null,"orderUrl":"http://127.0.0.1:18931/orders/01m80je06d7aca5stxyc0g1dea-BT3RGB81","checkoutUrl":"http://127.0.0.1:18931/orders/01m80je06d7aca5stxyc0g1dea-BT3RGB81/checkout","paymentUrl":null,"successUrl":null,"cancelUrl":null,"createdAt":"2026-11-22T02:47:43Z","updatedAt":"2026-11-22T02:47:43Z"}`

// BenchmarkFeedFollowers20: twenty followers each reading the same page
// of 1,000 orders from the ring and writing it as the server does (into
// the body buffer its connection keeps); ns/op is per change delivered
// to a follower.
func BenchmarkFeedFollowers20(b *testing.B) {
	const evt, followers, limit = "evt_01m80je06d7aca5stxyc0g1dea", 20, 1000
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	ring := feed.NewRing(0)
	for i := 1; i <= feed.RingLen; i++ {
		ring.Put(uint64(i), feed.AppendValue(nil, event.FeedTypeCode(event.FeedOrderCreated), at.Add(time.Duration(i)*time.Millisecond), []byte(benchOrder)))
	}
	c := event.ReadFeed{After: 2000, From: true, Limit: limit}
	bufs := make([][]byte, followers)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += followers * limit {
		for f := range followers {
			p, ok := ring.Page(c, feed.RingLen, at)
			if !ok || len(p.Entries) != limit {
				b.Fatal("page")
			}
			out := feedPageOf(thttp.CurrentVersion, evt, p).AppendJSON(bufs[f][:0])
			bufs[f] = out
			if len(out) < limit*len(benchOrder) {
				b.Fatal("short")
			}
		}
	}
}

// BenchmarkFeedFollowers20Pieces is BenchmarkFeedFollowers20 as the
// server now writes a large page: its pieces (the kept renderings
// themselves), with no copy into a body buffer; ns/op is per change
// delivered to a follower (the kernel's send of the bytes, the same
// either way, left out). Each follower reads from a position of its own
// (the ring keeps whole pages for the next reader from the same one: see
// BenchmarkFeedFollowers20Shared), so each page is made for its reader.
func BenchmarkFeedFollowers20Pieces(b *testing.B) {
	const evt, followers, limit = "evt_01m80je06d7aca5stxyc0g1dea", 20, 1000
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	ring := feed.NewRing(0)
	for i := 1; i <= feed.RingLen; i++ {
		ring.Put(uint64(i), feed.AppendValue(nil, event.FeedTypeCode(event.FeedOrderCreated), at.Add(time.Duration(i)*time.Millisecond), []byte(benchOrder)))
	}
	c := event.ReadFeed{After: 2000, From: true, Limit: limit}
	pieces := make([][][]byte, followers)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += followers * limit {
		for f := range followers {
			c.After = uint64(2000 + f)
			p, ok := ring.Page(c, feed.RingLen, at)
			if !ok || len(p.Entries) != limit {
				b.Fatal("page")
			}
			pieces[f] = feedPageOf(thttp.CurrentVersion, evt, p).AppendPieces(pieces[f][:0])
			n := 0
			for _, w := range pieces[f] {
				n += len(w)
			}
			if n < limit*len(benchOrder) {
				b.Fatal("short")
			}
		}
	}
}

// BenchmarkFeedFollowers20Shared is BenchmarkFeedFollowers20Pieces with
// the page shared as the event's actor shares it among the followers one
// commit wakes at one position (event.FeedPageMemo): read from the ring
// once, its wire form made once; ns/op is per change delivered.
func BenchmarkFeedFollowers20Shared(b *testing.B) {
	const evt, followers, limit = "evt_01m80je06d7aca5stxyc0g1dea", 20, 1000
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	ring := feed.NewRing(0)
	for i := 1; i <= feed.RingLen; i++ {
		ring.Put(uint64(i), feed.AppendValue(nil, event.FeedTypeCode(event.FeedOrderCreated), at.Add(time.Duration(i)*time.Millisecond), []byte(benchOrder)))
	}
	c := event.ReadFeed{After: 2000, From: true, Limit: limit}
	pieces := make([][][]byte, followers)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += followers * limit {
		p, ok := ring.Page(c, feed.RingLen, at)
		if !ok || len(p.Entries) != limit {
			b.Fatal("page")
		}
		p = p.WithMemo(new(event.FeedPageMemo))
		for f := range followers {
			pieces[f] = feedPageOf(thttp.CurrentVersion, evt, p).AppendPieces(pieces[f][:0])
			n := 0
			for _, w := range pieces[f] {
				n += len(w)
			}
			if n < limit*len(benchOrder) {
				b.Fatal("short")
			}
		}
	}
}
