package bench

import (
	"bytes"
	"fmt"
	"html"
	"net/url"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/bench/load"
)

const (
	// Dashboards is how many console dashboards are open during the drop.
	Dashboards = 20
	// DashboardPoll is the interval at which the console's script fetches
	// a dashboard's live fragment (http/console/shell/templates/console.js).
	DashboardPoll = 5 * time.Second
	// DashboardFastPoll is a variant five times as eager, so that a cost
	// the real interval hides below the noise would show.
	DashboardFastPoll = time.Second
)

var consoleCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// consoleSignIn signs in to the console as the operator with the admin
// token, as a browser does: the sign-in form's double-submit token (its
// cookie and its field) then the form's POST. It returns the session
// cookie ("name=value").
func consoleSignIn(c *load.Client, adminToken string) (string, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(c.Base + "/console/login")
	if err := c.HC.DoTimeout(req, resp, 10*time.Second); err != nil {
		return "", fmt.Errorf("bench: console sign-in form: %w", err)
	}
	m := consoleCSRF.FindSubmatch(resp.Body())
	login := cookie(resp, "ticketd_console_login")
	if resp.StatusCode() != 200 || m == nil || login == "" {
		return "", fmt.Errorf("bench: console sign-in form: status %d, no CSRF token or cookie", resp.StatusCode())
	}
	req.Reset()
	resp.Reset()
	req.Header.SetMethod("POST")
	req.SetRequestURI(c.Base + "/console/login")
	req.Header.SetContentType("application/x-www-form-urlencoded")
	req.Header.SetCookie("ticketd_console_login", login)
	req.SetBodyString(url.Values{"csrf": {html.UnescapeString(string(m[1]))}, "token": {adminToken}}.Encode())
	if err := c.HC.DoTimeout(req, resp, 10*time.Second); err != nil {
		return "", fmt.Errorf("bench: console sign-in: %w", err)
	}
	sid := cookie(resp, "ticketd_console")
	if resp.StatusCode() != 303 || sid == "" {
		return "", fmt.Errorf("bench: console sign-in: status %d, no session cookie: %s", resp.StatusCode(), load.Truncate(resp.Body(), 200))
	}
	return "ticketd_console=" + sid, nil
}

// cookie is the value of the cookie name that resp sets ("" when none).
func cookie(resp *fasthttp.Response, name string) string {
	var k fasthttp.Cookie
	k.SetKey(name)
	if !resp.Header.Cookie(&k) {
		return ""
	}
	return string(k.Value())
}

// dashboardPollers are signed-in console sessions each fetching an event's
// live dashboard fragment every interval, on connections of their own (a
// browser's), their phases spread evenly over the interval as browsers
// opened at different moments would be.
type dashboardPollers struct {
	c        *load.Client
	path     string
	sessions []string

	polls, failed atomic.Int64
	firstErr      atomic.Value
}

// run polls until stop is closed.
func (p *dashboardPollers) run(interval time.Duration, stop <-chan struct{}) {
	var wg sync.WaitGroup
	for i, sess := range p.sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			t := time.NewTimer(interval * time.Duration(i) / time.Duration(len(p.sessions)))
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
				}
				t.Reset(interval)
				req.Reset()
				req.SetRequestURI(p.c.Base + p.path)
				req.Header.Set("Cookie", sess)
				err := p.c.HC.DoTimeout(req, resp, 10*time.Second)
				p.polls.Add(1)
				// The fragment shows the counters; a sign-in page or an
				// error page in its place is a failed poll.
				if err != nil || resp.StatusCode() != 200 || !bytes.Contains(resp.Body(), []byte(`id="stat-sold"`)) {
					p.failed.Add(1)
					p.firstErr.CompareAndSwap(nil, fmt.Sprintf("status %d %v %s", resp.StatusCode(), err, load.Truncate(resp.Body(), 200)))
				}
			}
		}()
	}
	wg.Wait()
}

// DashboardReport is the flash sale's throughput beside open console
// dashboards, as a ratio to the same drop without them, rounds
// interleaved in one run.
type DashboardReport struct {
	Dashboards int     `json:"dashboards"`
	Rounds     int     `json:"rounds"`
	AloneRPS   float64 `json:"aloneRps"`  // mean over rounds
	PollRPS    float64 `json:"pollRps"`   // dashboards polling every DashboardPoll
	FastRPS    float64 `json:"fastRps"`   // every DashboardFastPoll
	Ratio      float64 `json:"ratio"`     // PollRPS / AloneRPS
	FastRatio  float64 `json:"fastRatio"` // FastRPS / AloneRPS
	Polls      int64   `json:"polls"`
	// PollCPUUs is the service's CPU time per live-fragment poll, from
	// the polls alone in a closed loop with no drop; PollCores is what
	// Dashboards polling every DashboardPoll cost at that price. The
	// ratios above move by more than 5% between rounds of one kind on a
	// busy machine; this figure does not depend on the drop.
	PollCPUUs float64 `json:"pollCpuUs"`
	PollCores float64 `json:"pollCores"`
}

// consoleDashboards measures the flash sale without and with Dashboards
// console dashboards open, interleaved: each round runs the drop alone,
// beside dashboards polling at the console's interval and beside
// dashboards polling every second, the order turned around every other
// round so a drift of the machine's speed weighs on all three alike.
func (h *Harness) consoleDashboards(s *load.Server, c *load.Client) error {
	if s.AdminToken == "" {
		return fmt.Errorf("bench: console dashboards: the service printed no admin token")
	}
	e, err := c.CreateEvent(s.SecretKey, "Console dashboards", 10_000_000)
	if err != nil {
		return err
	}
	pc, err := s.Client(Dashboards)
	if err != nil {
		return err
	}
	p := &dashboardPollers{c: pc, path: "/console/events/" + e.EventID + "/dashboard/live"}
	for range Dashboards {
		sess, err := consoleSignIn(pc, s.AdminToken)
		if err != nil {
			return err
		}
		p.sessions = append(p.sessions, sess)
	}
	// The machine's speed drifts by more than the effect sought over a
	// few seconds, so the quick preset trades length for more rounds.
	rounds := 3
	if h.cfg.Quick {
		rounds = 4
	}
	var ack load.Acks
	sum := map[time.Duration]float64{}
	order := []time.Duration{0, DashboardPoll, DashboardFastPoll}
	for r := range rounds {
		for k := range order {
			iv := order[k]
			if r%2 == 1 {
				iv = order[len(order)-1-k]
			}
			if err := settle(c); err != nil {
				return err
			}
			name := "dashboards-none"
			if iv > 0 {
				name = fmt.Sprintf("dashboards-%d@%s", Dashboards, iv)
			}
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				if iv > 0 {
					p.run(iv, stop)
				}
			}()
			res := h.record(h.drop(name, c, s, e, 0, &ack, fmt.Sprintf("cd%d-%d-", r, k)).Run())
			close(stop)
			<-done
			sum[iv] += res.RPS
		}
	}
	n := float64(rounds)
	d := &DashboardReport{Dashboards: Dashboards, Rounds: rounds, AloneRPS: sum[0] / n, PollRPS: sum[DashboardPoll] / n,
		FastRPS: sum[DashboardFastPoll] / n, Polls: p.polls.Load()}
	if err := settle(c); err != nil {
		return err
	}
	var next atomic.Int64
	alone := h.record((&load.Load{Name: "dashboard-live-alone", Client: pc, Conns: Dashboards, Duration: h.cfg.OpenDuration, ServerPID: s.Pid(),
		Make: func(_ int64, req *fasthttp.Request) bool {
			req.SetRequestURI(pc.Base + p.path)
			req.Header.Set("Cookie", p.sessions[next.Add(1)%int64(len(p.sessions))])
			return true
		},
		Check: func(_ int64, st int, body []byte) {
			if st != 200 || !bytes.Contains(body, []byte(`id="stat-sold"`)) {
				p.failed.Add(1)
			}
		}}).Run())
	p.polls.Add(alone.Requests)
	d.PollCPUUs = alone.ServerCPUUsPerRequest
	d.PollCores = float64(Dashboards) / DashboardPoll.Seconds() * d.PollCPUUs / 1e6
	if d.AloneRPS > 0 {
		d.Ratio, d.FastRatio = d.PollRPS/d.AloneRPS, d.FastRPS/d.AloneRPS
	}
	h.rep.Dashboards = d
	h.logf("   %d dashboards: every %s %.3f x the drop alone (%.0f vs %.0f orders/s), every %s %.3f x (%.0f); %d polls; %.0f us of service CPU a poll, %.5f cores at every %s",
		Dashboards, DashboardPoll, d.Ratio, d.PollRPS, d.AloneRPS, DashboardFastPoll, d.FastRatio, d.FastRPS, d.Polls, d.PollCPUUs, d.PollCores, DashboardPoll)
	if msg, ok := p.firstErr.Load().(string); ok {
		h.logf("   first failed poll: %s", msg)
	}
	h.rep.check("console-dashboards", "every dashboard poll answered its fragment", p.polls.Load() > 0 && p.failed.Load() == 0,
		"%d polls, %d failed", p.polls.Load(), p.failed.Load())
	return h.verifyOrders("console-dashboards", c, s, e, &ack)
}
