package bench

import (
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
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

// BenchmarkFeedFloor is the floor under feed-follow's target: what it
// costs both sides, on the same cores, only to move a feed page to 20
// followers over loopback TCP and have each check it as the generator's
// followers do (feedFollower.take), with no HTTP, no service and no sale.
// One op is one page of 1,000 changes delivered to every follower; the
// metric cpu-µs/order is the process's CPU (both ends) per change
// delivered to all 20, i.e. per order of the flash sale. feed-follow's
// 0.9 leaves the followers about 8 µs an order on the sale's two cores
// (bench/results/20261129-idle.md, 18:07): a floor at or above that
// says no service can meet it on this machine.
func BenchmarkFeedFloor(b *testing.B) {
	const eid, followers = "evt_01m80je06d7aca5stxyc0g1dea", 20
	pg := benchPage(eid, 0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	var wg sync.WaitGroup
	conns := make([]net.Conn, 0, followers)
	for range followers {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c, s)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	b.SetBytes(int64(len(pg)) * followers)
	cpu0 := processCPU()
	b.ResetTimer()
	errs := make(chan error, 2*followers)
	for i := 0; i < 2*followers; i += 2 {
		client, server := conns[i], conns[i+1]
		wg.Add(2)
		go func() { // the service's side: the same page to every follower
			defer wg.Done()
			for range b.N {
				if _, err := server.Write(pg); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() { // a follower: read the page into its buffer, check it
			defer wg.Done()
			buf := make([]byte, len(pg))
			f := &feedFollower{eid: eid, lags: make([]float64, 0, 1000)}
			for range b.N {
				if _, err := io.ReadFull(client, buf); err != nil {
					errs <- err
					return
				}
				f.last, f.lags = 0, f.lags[:0]
				if _, err := f.take(buf, time.Now()); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(time.Microsecond)/float64(b.N*1000), "cpu-µs/order")
}

// processCPU is the process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
