package load

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Client talks to one server over a bounded pool of keep-alive connections.
type Client struct {
	Base string // e.g. http://127.0.0.1:1234
	HC   *fasthttp.HostClient
	// AdminToken authorizes the scrapes of /metrics.
	AdminToken string
}

// NewClient returns a client of base with at most conns connections.
func NewClient(base string, conns int) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("bench: client: %w", err)
	}
	return &Client{Base: base, HC: &fasthttp.HostClient{
		Addr:                      u.Host,
		MaxConns:                  conns,
		MaxConnWaitTimeout:        time.Minute,
		ReadTimeout:               time.Minute,
		WriteTimeout:              time.Minute,
		MaxIdemponentCallAttempts: 1, // a retried request would be counted once
		MaxResponseBodySize:       16 << 20,
	}}, nil
}

// Do sends one request and returns the status and a copy of the body.
func (c *Client) Do(method, path, token string, body any) (int, []byte, error) {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(method)
	req.SetRequestURI(c.Base + path)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		b, ok := body.([]byte)
		if !ok {
			var err error
			if b, err = json.Marshal(body); err != nil {
				return 0, nil, fmt.Errorf("bench: encode %s %s: %w", method, path, err)
			}
		}
		req.Header.SetContentType("application/json")
		req.SetBody(b)
	}
	if err := c.HC.DoTimeout(req, resp, time.Minute); err != nil {
		return 0, nil, fmt.Errorf("bench: %s %s: %w", method, path, err)
	}
	return resp.StatusCode(), append([]byte(nil), resp.Body()...), nil
}

// JSON sends a request, checks the status is want and decodes the body
// into out (when not nil).
func (c *Client) JSON(method, path, token string, body any, want int, out any) error {
	st, b, err := c.Do(method, path, token, body)
	if err != nil {
		return err
	}
	if st != want {
		return fmt.Errorf("bench: %s %s: status %d, want %d: %s", method, path, st, want, Truncate(b, 300))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("bench: %s %s: decode: %w", method, path, err)
		}
	}
	return nil
}

// Truncate cuts b to at most n bytes, for error messages.
func Truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// EventSetup is an event with one open ticket type, created through the
// Developer API.
type EventSetup struct {
	EventID, TicketTypeID string
	Capacity              int
}

// IDOnly decodes the id of an API object.
type IDOnly struct {
	ID string `json:"id"`
}

// CreateEvent creates a published event with one open free ticket type of
// capacity places.
func (c *Client) CreateEvent(sk, name string, capacity int) (EventSetup, error) {
	var ev, tt IDOnly
	if err := c.JSON("POST", "/v1/events", sk, map[string]any{
		"name": name, "timezone": "UTC", "startsAt": "2027-06-01T09:00:00Z",
	}, 201, &ev); err != nil {
		return EventSetup{}, err
	}
	if err := c.JSON("POST", "/v1/events/"+ev.ID+"/ticket-types", sk, map[string]any{
		"name": "General admission", "capacity": capacity, "priceAmount": 0,
	}, 201, &tt); err != nil {
		return EventSetup{}, err
	}
	if err := c.JSON("PATCH", "/v1/events/"+ev.ID+"/ticket-types/"+tt.ID, sk, map[string]any{"status": "open"}, 200, nil); err != nil {
		return EventSetup{}, err
	}
	if err := c.JSON("PATCH", "/v1/events/"+ev.ID, sk, map[string]any{"status": "published"}, 200, nil); err != nil {
		return EventSetup{}, err
	}
	return EventSetup{EventID: ev.ID, TicketTypeID: tt.ID, Capacity: capacity}, nil
}

// Availability is a ticket type's availability object.
type Availability struct {
	Capacity   int `json:"capacity"`
	Confirmed  int `json:"confirmed"`
	Waitlisted int `json:"waitlisted"`
	Held       int `json:"held"`
	Remaining  int `json:"remaining"`
}

// Availability reads the ticket type's availability.
func (c *Client) Availability(sk string, e EventSetup) (Availability, error) {
	var a Availability
	err := c.JSON("GET", "/v1/events/"+e.EventID+"/ticket-types/"+e.TicketTypeID+"/availability", sk, nil, 200, &a)
	return a, err
}

// Register creates n confirmed registrations with conc requests in flight
// and returns their ids in creation order.
func (c *Client) Register(sk string, e EventSetup, prefix string, n, conc int) ([]string, error) {
	ids := make([]string, n)
	var next atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				var r IDOnly
				err := c.JSON("POST", "/v1/events/"+e.EventID+"/registrations", sk, map[string]any{
					"email": prefix + strconv.Itoa(i) + "@bench.example", "name": "Bench", "registrationTypeId": e.TicketTypeID,
				}, 201, &r)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				ids[i] = r.ID
			}
		}()
	}
	wg.Wait()
	return ids, firstErr
}

// Paginate reads every page of a list endpoint (limit 100) and calls each
// with every item's raw JSON. maxPages bounds the walk.
func (c *Client) Paginate(path, token string, maxPages int, each func(json.RawMessage) error) error {
	cursor := ""
	for range maxPages {
		p := path + sep(path) + "limit=100"
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		var page struct {
			Data       []json.RawMessage `json:"data"`
			HasMore    bool              `json:"hasMore"`
			NextCursor *string           `json:"nextCursor"`
		}
		if err := c.JSON("GET", p, token, nil, 200, &page); err != nil {
			return err
		}
		for _, d := range page.Data {
			if err := each(d); err != nil {
				return err
			}
		}
		if !page.HasMore || page.NextCursor == nil {
			return nil
		}
		cursor = *page.NextCursor
	}
	return fmt.Errorf("bench: paginate %s: more than %d pages", path, maxPages)
}

func sep(path string) string {
	if bytes.IndexByte([]byte(path), '?') >= 0 {
		return "&"
	}
	return "?"
}

// Retry503 sends a bodiless request until it answers 200, retrying 503s
// (an actor caught passivating answers 503 once) up to 20 times.
func (c *Client) Retry503(method, path, token string) error {
	for attempt := range 20 {
		st, b, err := c.Do(method, path, token, nil)
		if err != nil {
			return err
		}
		switch st {
		case 200:
			return nil
		case 503:
			time.Sleep(time.Duration(attempt+1) * 10 * time.Millisecond)
		default:
			return fmt.Errorf("bench: %s %s: status %d: %s", method, path, st, Truncate(b, 300))
		}
	}
	return fmt.Errorf("bench: %s %s: still 503 after 20 attempts", method, path)
}

// DoSigned sends a raw body with one extra header (a webhook's signature)
// and returns the status and a copy of the body.
func (c *Client) DoSigned(method, path string, body []byte, header, value string) (int, []byte, error) {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(method)
	req.SetRequestURI(c.Base + path)
	req.Header.SetContentType("application/json")
	req.Header.Set(header, value)
	req.SetBody(body)
	if err := c.HC.DoTimeout(req, resp, time.Minute); err != nil {
		return 0, nil, fmt.Errorf("bench: %s %s: %w", method, path, err)
	}
	return resp.StatusCode(), append([]byte(nil), resp.Body()...), nil
}
