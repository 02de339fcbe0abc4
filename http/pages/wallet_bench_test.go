package pages_test

import (
	"io"
	nethttp "net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
)

// BenchmarkTicketRequests is the service time of one buyer's request for
// the PDF and for the Apple pass through the real service: the gate
// cookie checked, the pass, ticket type and location read from the
// event's actor, the file built, over loopback HTTP.
func BenchmarkTicketRequests(b *testing.B) {
	rec := &recorder{}
	opt, _ := withWalletsTB(b, rec)
	s := startService(b, opt)
	u := s.NewUnit("Bench")
	ev := pgPublished(b, s, u.Secret, 0)
	reg := pgAPI(b, s, u.Secret, "POST", "/v1/events/"+ev.ID+"/registrations", map[string]any{
		"email": "bench@example.com", "name": "Bench", "registrationTypeId": ev.TypeID})
	passURL := reg["passUrl"].(string)
	jar, _ := cookiejar.New(nil)
	c := &nethttp.Client{Jar: jar, CheckRedirect: func(*nethttp.Request, []*nethttp.Request) error { return nethttp.ErrUseLastResponse }}
	res, err := c.PostForm(passURL, url.Values{"form": {"gate"}, "email": {"bench@example.com"}})
	if err != nil || res.StatusCode != 303 {
		b.Fatalf("gate: %v %v", err, res)
	}
	res.Body.Close()
	for _, f := range []struct{ name, path, ctype string }{{"pdf", "/ticket.pdf", "application/pdf"},
		{"pkpass", "/wallet.pkpass", "application/vnd.apple.pkpass"}} {
		b.Run(f.name, func(b *testing.B) {
			for b.Loop() {
				res, err := c.Get(passURL + f.path)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), f.ctype) || n == 0 {
					b.Fatalf("%s: %d %s", f.path, res.StatusCode, res.Header.Get("Content-Type"))
				}
			}
		})
	}
}
