package bench

// The generator's own work per request, in process and without sockets:
// build the request and write it, read the service's answer (the bytes
// ticketd and the ceiling answer, as captured from them) and check it.
// Both processes share the machine's two cores, so this is part of every
// ratio to the ceiling; compare a route's figure with the ceiling's.
//
//	go test -run '^$' -bench Client -benchmem ./bench/

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"ticketd/bench/load"
)

// The answers, as the services write them (headers and body), captured
// from ticketd 2026-11-29 (curl -i): the ceiling's order, a poll of a waiting entry, a join and a
// sold-out refusal.
var (
	ceilingAnswerRaw = "HTTP/1.1 201 Created\r\nDate: Sun, 29 Nov 2026 18:40:00 GMT\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
	pollAnswerRaw    = "HTTP/1.1 200 OK\r\nDate: Sun, 29 Nov 2026 18:40:00 GMT\r\nContent-Type: application/json\r\nContent-Length: %d\r\nRequest-Id: req_ca2a2b315d58_1f2a3\r\nX-Content-Type-Options: nosniff\r\nService-Version: 2026-08-22\r\nVary: Origin\r\nCache-Control: no-store\r\nRetry-After: 30\r\n\r\n"
	pollBody         = `{"queueId":"q_01KB8Z3M4Q6V8X0A2C4E6G8J0K","state":"waiting","position":41234,"estimatedWaitSeconds":42,"retryAfterSeconds":10,"onSaleAt":"2026-11-29T18:40:00Z"}`
	joinAnswerRaw    = strings.Replace(pollAnswerRaw, "200 OK", "201 Created", 1)
	joinBody         = `{"queueId":"q_01KB8Z3M4Q6V8X0A2C4E6G8J0K","state":"waiting","position":null,"estimatedWaitSeconds":null,"retryAfterSeconds":30,"onSaleAt":"2026-11-29T19:40:00Z"}`
	soldOutAnswerRaw = strings.Replace(strings.Replace(pollAnswerRaw, "200 OK", "412 Precondition Failed", 1), "Retry-After: 30\r\n", "", 1)
	soldOutBody      = `{"error":{"code":412,"status":"FAILED_PRECONDITION","message":"sold out","reason":"SOLD_OUT"}}`
)

func answerBytes(head, body string) []byte {
	return []byte(strings.Replace(head, "%d", itoa(len(body)), 1) + body)
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		if n /= 10; n == 0 {
			return string(b[i:])
		}
	}
}

// clientRun writes each request make builds and reads answer back into
// check, as load.Load's worker does over its connection.
func clientRun(b *testing.B, answer []byte, mk func(i int64, req *fasthttp.Request), check func(i int64, st int, body []byte)) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	bw := bufio.NewWriter(io.Discard)
	rd := bytes.NewReader(answer)
	br := bufio.NewReader(rd)
	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	defer func() {
		// Process CPU per request (the collector's share included):
		// steadier than ns/op on a shared machine.
		b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	}()
	for i := range int64(b.N) {
		req.Reset()
		mk(i, req)
		if err := req.Write(bw); err != nil {
			b.Fatal(err)
		}
		_ = bw.Flush()
		rd.Reset(answer)
		br.Reset(rd)
		if err := resp.Read(br); err != nil {
			b.Fatal(err)
		}
		check(i, resp.StatusCode(), resp.Body())
	}
}

const benchKey = "pk_test_4f9c2a7e1b3d5f7a9c1e3b5d7f9a1c3e"

// BenchmarkClientCeiling is the ceiling's request (the flash sale's and
// sold-out's too): an order, its answer's order number acknowledged.
func BenchmarkClientCeiling(b *testing.B) {
	body := string(load.OrderNumberKey) + `01m80je06d7aca5stxyc0g1dea-BT3RGB81"`
	var ack load.Acks
	uri := "http://127.0.0.1:40000/storefront/v1/events/evt_ceiling/orders"
	clientRun(b, answerBytes(ceilingAnswerRaw, `{"id":"ord_1",`+body+`,"status":"open"}`), func(i int64, req *fasthttp.Request) {
		load.SetRequest(req, "POST", uri, benchKey)
		load.OrderBody(req, "c", i, "tt_01m80je08a0hs5x214cz7we1b7")
	}, func(_ int64, st int, body []byte) {
		if st == 201 {
			ack.Add(body)
		}
		if len(ack.All) > 1<<16 {
			ack.All = ack.All[:0]
		}
	})
}

// BenchmarkClientSoldOut is the sold-out drop's request: the ceiling's,
// answered 412.
func BenchmarkClientSoldOut(b *testing.B) {
	var ack load.Acks
	uri := "http://127.0.0.1:40000/storefront/v1/events/evt_01kb8z3m4q6v8x0a2c4e6g8j0k/orders"
	clientRun(b, answerBytes(soldOutAnswerRaw, soldOutBody), func(i int64, req *fasthttp.Request) {
		load.SetRequest(req, "POST", uri, benchKey)
		load.OrderBody(req, "so", i, "tt_01m80je08a0hs5x214cz7we1b7")
	}, func(_ int64, st int, body []byte) {
		if st == 201 || st == 200 {
			ack.Add(body)
		}
	})
}

const benchQueue = "http://127.0.0.1:40000/storefront/v1/events/evt_01kb8z3m4q6v8x0a2c4e6g8j0k/queue"

// BenchmarkClientQueuePoll is the census poll: a waiting entry's position.
func BenchmarkClientQueuePoll(b *testing.B) {
	const id = "q_01KB8Z3M4Q6V8X0A2C4E6G8J0K"
	ranks := make([]int, 1024)
	clientRun(b, answerBytes(pollAnswerRaw, pollBody), func(_ int64, req *fasthttp.Request) {
		load.SetRequestPath(req, "GET", benchQueue, id, benchKey)
	}, func(i int64, st int, body []byte) {
		pos, ok := censusAnswer(st, body, id)
		if !ok {
			b.Fatalf("census answer refused: %s", body)
		}
		ranks[i%1024] = pos - 1
	})
}

// BenchmarkClientQueueJoin is a join: the new entry's id kept.
func BenchmarkClientQueueJoin(b *testing.B) {
	ids := make([]string, 1024)
	clientRun(b, answerBytes(joinAnswerRaw, joinBody), func(_ int64, req *fasthttp.Request) {
		joinRequest(req, benchQueue, benchKey)
	}, func(i int64, st int, body []byte) {
		id, ok := joinAnswer(st, body)
		if !ok {
			b.Fatalf("join answer refused: %s", body)
		}
		ids[i%1024] = string(id)
	})
}
