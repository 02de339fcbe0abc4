package load

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// OrderBody is a storefront order of one place for buyer i.
func OrderBody(req *fasthttp.Request, prefix string, i int64, ticketType string) {
	b := req.SwapBody(nil)
	b = append(b[:0], `{"email":"`...)
	b = append(b, prefix...)
	b = strconv.AppendInt(b, i, 10)
	b = append(b, `@bench.example","name":"Buyer","items":[{"itemType":"registration_type","itemId":"`...)
	b = append(b, ticketType...)
	b = append(b, `","quantity":1}]}`...)
	req.SwapBody(b)
}

// SetRequest sets req's method, URI, bearer token (when not empty) and,
// for a method with a body, the JSON content type. Every scenario's
// requests and the ceiling's are built here, so what the generator spends
// building one is the same for all; nothing is allocated (the generator
// shares the cores with the service: see README, "CPU per request").
func SetRequest(req *fasthttp.Request, method, uri, token string) {
	SetRequestPath(req, method, uri, "", token)
}

// SetRequestPath is SetRequest of the URI base+"/"+id (id not empty), made
// without a string of its own.
func SetRequestPath(req *fasthttp.Request, method, base, id, token string) {
	req.Header.SetMethod(method)
	var b [256]byte
	u := append(b[:0], base...)
	if id != "" {
		u = append(append(u, '/'), id...)
	}
	req.SetRequestURIBytes(u)
	if token != "" {
		a := append(b[:0], "Bearer "...)
		req.Header.SetCanonical(hdrAuthorization, append(a, token...))
	}
	if method != fasthttp.MethodGet {
		req.Header.SetContentTypeBytes(jsonContentType)
	}
}

var (
	hdrAuthorization = []byte("Authorization")
	jsonContentType  = []byte("application/json")
)

// OrderNumberKey precedes the order number in an order's JSON.
var OrderNumberKey = []byte(`"orderNumber":"`)

// Acks collects the order numbers of acknowledged (2xx) orders.
type Acks struct {
	Mu  sync.Mutex
	All []string
}

// Add records the order number of an acknowledged order's body.
func (a *Acks) Add(body []byte) {
	i := bytes.Index(body, OrderNumberKey)
	if i < 0 {
		return
	}
	rest := body[i+len(OrderNumberKey):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return
	}
	a.Mu.Lock()
	a.All = append(a.All, string(rest[:j]))
	a.Mu.Unlock()
}

// N is how many orders were acknowledged.
func (a *Acks) N() int {
	a.Mu.Lock()
	defer a.Mu.Unlock()
	return len(a.All)
}

// emailSafe keeps the letters, digits and dashes of s.
func emailSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, s)
}

// MixSpec is the integrator's traffic: Developer API lists, reads and
// registrations on one event, open loop.
type MixSpec struct {
	Name          string        `json:"name"`
	Base          string        `json:"base"` // service URL
	SecretKey     string        `json:"secretKey"`
	EventID       string        `json:"eventId"`
	TicketTypeID  string        `json:"ticketTypeId"`
	Registrations []string      `json:"registrations"`
	Rate          float64       `json:"rate"`
	Conns         int           `json:"conns"`
	Duration      time.Duration `json:"duration"`
}

// Load returns the integrator's load on c.
func (m MixSpec) Load(c *Client) *Load {
	base := m.Base + "/v1/events/" + m.EventID
	return &Load{Name: m.Name, Client: c, Conns: m.Conns, Duration: m.Duration, Rate: m.Rate,
		Kind: mixKind,
		Make: func(i int64, req *fasthttp.Request) bool {
			switch mixKind(i) {
			case "list registrations":
				SetRequest(req, "GET", base+"/registrations?limit=20", m.SecretKey)
			case "get registration":
				SetRequest(req, "GET", base+"/registrations/"+m.Registrations[int(i)%len(m.Registrations)], m.SecretKey)
			case "get event":
				SetRequest(req, "GET", base, m.SecretKey)
			default:
				SetRequest(req, "POST", base+"/registrations", m.SecretKey)
				req.SetBodyString(`{"email":"` + emailSafe(m.Name) + strconv.FormatInt(i, 10) + `@bench.example","name":"Integrator","registrationTypeId":"` + m.TicketTypeID + `"}`)
			}
			return true
		}}
}

// mixKind names the integrator's request i: 40% list registrations, 30%
// get registration, 20% get event, 10% create registration.
func mixKind(i int64) string {
	switch i % 10 {
	case 0, 1, 2, 3:
		return "list registrations"
	case 4, 5, 6:
		return "get registration"
	case 7, 8:
		return "get event"
	}
	return "create registration"
}
