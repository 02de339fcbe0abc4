package api_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHoldLimitsHoarding is issue 31's hoarding run against the real
// service with its default hold limits (decisions §22): a few addresses
// placing as many unpaid orders as they can, with fresh emails and with one
// email, cannot hold the stock, and a real buyer from another address
// still buys. The counts are exact under concurrency and survive a restart.
func TestHoldLimitsHoarding(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t, withTrustedProxies("127.0.0.1/32"))
	s := f.store(t, map[string]any{"capacity": 100})
	from := func(c *apiClient, ip string) *apiClient { return c.WithHeader("X-Forwarded-For", ip) }
	const hoarders, tries, perIP = 3, 40, 10 // perIP: TICKETD_STOREFRONT_OPEN_ORDERS_PER_IP's default

	// Three addresses, 40 concurrent orders each, every one a fresh email.
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		statuses = map[int]int{}
		reasons  = map[string]int{}
	)
	for h := range hoarders {
		for i := range tries {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := s.sfOrder(t, from(s.sf, fmt.Sprintf("203.0.113.%d", h+1)), s.tt, fmt.Sprintf("bot%d-%d@example.com", h, i), nil)
				m := apiDecode(r.Body)
				mu.Lock()
				defer mu.Unlock()
				statuses[r.Status]++
				if r.Status != 201 {
					reasons[apiS(apiM(m, "error"), "reason")]++
				}
			}()
		}
	}
	wg.Wait()
	assert.Equal(t, map[int]int{201: hoarders * perIP, 429: hoarders * (tries - perIP)}, statuses)
	assert.Equal(t, map[string]int{"HOLD_LIMIT": hoarders * (tries - perIP)}, reasons)
	assert.EqualValues(t, hoarders*perIP, apiAvailability(t, s.dev, s.ev, s.tt)["held"])

	// One email, many addresses: one open order, the rest told which.
	first := apiWant(t, s.sfOrder(t, from(s.sf, "198.51.100.1"), s.tt, "one@example.com", nil), 201)
	for i := 2; i <= 6; i++ {
		e := apiWantErr(t, s.sfOrder(t, from(s.sf, fmt.Sprintf("198.51.100.%d", i)), s.tt, "ONE@example.com", nil), 409, "ALREADY_EXISTS")
		assert.Equal(t, "ORDER_ALREADY_OPEN", e["reason"])
		assert.Equal(t, []any{map[string]any{"field": "orderNumber", "reason": first["orderNumber"]}}, e["details"])
	}
	// The Developer API is not limited: the box office may hold more.
	apiWant(t, s.dev.Do("POST", "/v1/events/"+s.ev+"/orders", map[string]any{"email": "one@example.com", "items": apiTicket(s.tt)}), 201)

	// Checkout sessions: 20 unused per address, then refused.
	sess := map[int]int{}
	for range 25 {
		r := from(s.sf, "203.0.113.9").Do("POST", s.sfPath("/checkout-sessions"), map[string]any{"items": apiTicket(s.tt)})
		sess[r.Status]++
		if r.Status == 429 {
			assert.Equal(t, "CHECKOUT_SESSION_LIMIT", apiS(apiM(apiDecode(r.Body), "error"), "reason"))
		}
	}
	assert.Equal(t, map[int]int{201: 20, 429: 5}, sess)

	// A real buyer from another address buys, and is then free to order
	// again (the order is paid, no longer open).
	buyer := from(s.sf, "192.0.2.77")
	o := apiWant(t, s.sfOrder(t, buyer, s.tt, "real@example.com", nil), 201)
	paid := apiWant(t, buyer.Do("POST", s.sfPath("/orders/"+apiS(o, "orderNumber")+"/confirm"), nil), 200)
	assert.Equal(t, "paid", paid["status"])

	again := apiWant(t, s.sfOrder(t, buyer, s.tt, "real@example.com", nil), 201)
	// Cancelling it frees its count at once.
	apiWant(t, buyer.Do("POST", s.sfPath("/orders/"+apiS(again, "orderNumber")+"/cancel"), nil), 200)
	apiWant(t, s.sfOrder(t, buyer, s.tt, "real2@example.com", nil), 201)
	e := apiWantErr(t, s.sfOrder(t, from(s.sf, "203.0.113.2"), s.tt, "x@example.com", nil), 429, "RESOURCE_EXHAUSTED")
	assert.Equal(t, "HOLD_LIMIT", e["reason"])

	// The counts survive a restart: they are rebuilt from the log.
	f.s.Restart()
	s.sf, s.dev = f.client(t).WithKey(s.Publishable), f.client(t).WithKey(s.Secret)
	e = apiWantErr(t, s.sfOrder(t, from(s.sf, "203.0.113.3"), s.tt, "y@example.com", nil), 429, "RESOURCE_EXHAUSTED")
	assert.Equal(t, "HOLD_LIMIT", e["reason"])
	e = apiWantErr(t, s.sfOrder(t, from(s.sf, "198.51.100.9"), s.tt, "one@example.com", nil), 409, "ALREADY_EXISTS")
	assert.Equal(t, "ORDER_ALREADY_OPEN", e["reason"])
	r := from(s.sf, "203.0.113.9").Do("POST", s.sfPath("/checkout-sessions"), map[string]any{"items": apiTicket(s.tt)})
	require.Equal(t, 429, r.Status, r.Body)
}
