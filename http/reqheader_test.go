package http

import (
	"bufio"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestPeekHeaderAsFasthttp: PeekHeader answers what fasthttp's Peek and
// PeekAll answer (value, and sent even when empty) for parsed requests,
// whatever the case the client wrote, for headers sent once, twice,
// empty, or not at all.
func TestPeekHeaderAsFasthttp(t *testing.T) {
	raw := "POST /x HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 2\r\n" +
		"authorization: Bearer pk_1\r\nIDEMPOTENCY-KEY: \r\nqueue-token: qt_1\r\nQueue-Token: qt_2\r\nOrigin: https://shop.example\r\n\r\n{}"
	var req fasthttp.Request
	if err := req.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Authorization", "authorization", "Idempotency-Key", "Queue-Token", "Origin", "Request-Id",
		"Service-Version", "service-version", "X-Missing"} {
		v, sent := PeekHeader(&req.Header, name)
		want := req.Header.Peek(name)
		wantSent := len(req.Header.PeekAll(name)) > 0
		if string(v) != string(want) || sent != wantSent {
			t.Errorf("%s: PeekHeader %q %v, fasthttp %q %v", name, v, sent, want, wantSent)
		}
	}
	if n := testing.AllocsPerRun(100, func() { PeekHeader(&req.Header, "Queue-Token") }); n != 0 {
		t.Errorf("%v allocations a lookup", n)
	}
}
