package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ticketd/bench/load"
	"ticketd/payments"
)

// paidFlashSale is the flash sale of a paid ticket through the sandbox
// provider: each buyer places a storefront order, confirms it (a paid
// order awaits payment) and the provider's signed webhook settles it,
// three requests in a row per buyer on Conns buyers at once (closed loop).
// Its throughput is buyers settled per second, reported as a ratio to the
// free flash sale's orders per second (one request per buyer). After it:
// nothing oversold, and every settled buyer holds a confirmed place.
func (h *Harness) paidFlashSale(s *load.Server, c *load.Client) error {
	secret, err := os.ReadFile(filepath.Join(s.DataDir, "payment-webhook-secret"))
	if err != nil {
		return fmt.Errorf("bench: paid flash sale: the sandbox's webhook secret: %w", err)
	}
	sandbox := payments.NewSandbox(strings.TrimSpace(string(secret)), s.URL, s.URL+"/webhooks/payments/sandbox")
	e, err := createPaidEvent(c, s.SecretKey, "Paid flash sale", 10_000_000, 25)
	if err != nil {
		return err
	}
	base := "/storefront/v1/events/" + e.EventID + "/orders"
	var (
		settled, failed atomic.Int64
		mu              sync.Mutex
		lat             []time.Duration
		statuses        = map[int]int64{}
		firstErr        atomic.Value
	)
	fail := func(step string, st int, body []byte, err error) {
		failed.Add(1)
		mu.Lock()
		statuses[st]++
		mu.Unlock()
		firstErr.CompareAndSwap(nil, fmt.Sprintf("%s: status %d %v %s", step, st, err, load.Truncate(body, 200)))
	}
	buyer := func(i int64) {
		t0 := time.Now()
		st, b, err := c.Do("POST", base, s.PublishableKey, map[string]any{
			"email": fmt.Sprintf("pf%d@bench.example", i), "name": "Buyer",
			"items": []map[string]any{{"itemType": "registration_type", "itemId": e.TicketTypeID, "quantity": 1}}})
		if err != nil || st != 201 {
			fail("place", st, b, err)
			return
		}
		var o struct {
			OrderNumber string      `json:"orderNumber"`
			PaymentID   string      `json:"paymentId"`
			TotalAmount json.Number `json:"totalAmount"`
			Currency    string      `json:"currency"`
			Status      string      `json:"status"`
		}
		_ = json.Unmarshal(b, &o)
		st, b, err = c.Do("POST", base+"/"+o.OrderNumber+"/confirm", s.PublishableKey, map[string]any{})
		if err != nil || st != 200 {
			fail("confirm", st, b, err)
			return
		}
		if err := json.Unmarshal(b, &o); err != nil || o.PaymentID == "" || o.Status != "awaiting_payment" {
			fail("confirm", st, b, err)
			return
		}
		body := payments.Body(payments.NewDeliveryID(), payments.Succeeded, payments.Payment{
			ID: o.PaymentID, OrderNumber: o.OrderNumber, Amount: o.TotalAmount.String(), Currency: o.Currency})
		st, b, err = c.DoSigned("POST", "/webhooks/payments/sandbox", body, payments.SignatureHeader, sandbox.Sign(time.Now(), body))
		if err != nil || st != 200 {
			fail("webhook", st, b, err)
			return
		}
		d := time.Since(t0)
		settled.Add(1)
		mu.Lock()
		statuses[st]++
		if len(lat) < 1_000_000 {
			lat = append(lat, d)
		}
		mu.Unlock()
	}
	var next atomic.Int64
	deadline := time.Now().Add(h.cfg.Duration)
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < h.cfg.Conns; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				buyer(next.Add(1))
			}
		}()
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	ms := func(q float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[int(q*float64(len(lat)-1))]) / 1e6
	}
	res := h.record(load.Result{Name: "paid-flash-sale", Mode: "closed", Conns: h.cfg.Conns, RPS: float64(settled.Load()) / secs,
		Requests: settled.Load() + failed.Load(), Status: statuses, Seconds: secs,
		P50: ms(0.5), P99: ms(0.99), P999: ms(0.999), Max: ms(1)})
	free := 0.0
	for _, r := range h.rep.Runs {
		if r.Name == "flash-sale" {
			free = r.RPS
		}
	}
	if free > 0 {
		h.logf("   paid flash sale: %.0f buyers/s settled (place + confirm + webhook), %.2f x the free flash sale's %.0f orders/s",
			res.RPS, res.RPS/free, free)
		h.rep.check("paid-flash-sale", "ratio to the free flash sale (buyers/s)", true, "%.2f: paid %.0f buyers/s, free %.0f orders/s", res.RPS/free, res.RPS, free)
	}
	if msg, ok := firstErr.Load().(string); ok {
		h.logf("   first failure: %s", msg)
	}
	h.rep.check("paid-flash-sale", "every buyer settled", failed.Load() == 0, "%d settled, %d failed", settled.Load(), failed.Load())
	a, err := c.Availability(s.SecretKey, e)
	if err != nil {
		return err
	}
	h.rep.check("paid-flash-sale", "no oversell", a.Held+a.Confirmed <= a.Capacity, "capacity %d, held %d, confirmed %d", a.Capacity, a.Held, a.Confirmed)
	h.rep.check("paid-flash-sale", "every settled buyer confirmed", int64(a.Confirmed) == settled.Load(),
		"settled %d, confirmed %d, held %d", settled.Load(), a.Confirmed, a.Held)
	return nil
}

// createPaidEvent is CreateEvent with a ticket type at price.
func createPaidEvent(c *load.Client, sk, name string, capacity int, price float64) (load.EventSetup, error) {
	var ev, tt load.IDOnly
	if err := c.JSON("POST", "/v1/events", sk, map[string]any{
		"name": name, "timezone": "UTC", "startsAt": "2027-06-01T09:00:00Z",
	}, 201, &ev); err != nil {
		return load.EventSetup{}, err
	}
	if err := c.JSON("POST", "/v1/events/"+ev.ID+"/ticket-types", sk, map[string]any{
		"name": "General admission", "capacity": capacity, "priceAmount": price,
	}, 201, &tt); err != nil {
		return load.EventSetup{}, err
	}
	if err := c.JSON("PATCH", "/v1/events/"+ev.ID+"/ticket-types/"+tt.ID, sk, map[string]any{"status": "open"}, 200, nil); err != nil {
		return load.EventSetup{}, err
	}
	if err := c.JSON("PATCH", "/v1/events/"+ev.ID, sk, map[string]any{"status": "published"}, 200, nil); err != nil {
		return load.EventSetup{}, err
	}
	return load.EventSetup{EventID: ev.ID, TicketTypeID: tt.ID, Capacity: capacity}, nil
}
