package eventwork

import (
	"bytes"
	"fmt"
	"html/template"
	"strings"
	"time"

	"ticketd/event"
	"ticketd/http/console/shell"
)

// dashData is the live part of an event's dashboard: the machine's
// counters (event.GetDashboard, each ticket type's availability), never a
// scan of registrations or orders, so a poll costs a few actor reads.
type dashData struct {
	Types     []shell.TicketTypeRow
	Capacity  int
	Unlimited bool
	event.Dashboard
	Doors []doorRow
	Chart template.HTML // the sales chart, an inline SVG
	TZ    string
}

type doorRow struct {
	Label    string
	Checkins int
}

func (c *pages) dashboard(eventID string) (*dashData, error) {
	ev, err := shell.AskOp(c.Console, eventID, event.GetEvent{})
	if err != nil {
		return nil, err
	}
	tz, now := ev.Timezone, c.Config.Now()
	list, err := shell.AskOp(c.Console, eventID, event.ListTicketTypes{Limit: 100})
	if err != nil {
		return nil, err
	}
	d := &dashData{}
	for _, tt := range list.Data {
		av, err := shell.AskOp(c.Console, eventID, event.GetAvailability{ID: tt.ID})
		if err != nil {
			return nil, err
		}
		d.Types = append(d.Types, shell.TicketTypeRow{TicketType: tt, Avail: av})
		if av.Capacity == nil {
			d.Unlimited = true
		} else {
			d.Capacity += *av.Capacity
		}
	}
	if d.Dashboard, err = shell.AskOp(c.Console, eventID, event.GetDashboard{}); err != nil {
		return nil, err
	}
	doors, err := c.doors(eventID)
	if err != nil {
		return nil, err
	}
	label := map[string]string{}
	for _, o := range doors {
		label[o.Value] = o.Label
	}
	for _, dc := range d.Dashboard.Doors {
		key := dc.SubjectType
		if dc.SubjectID != nil {
			key += ":" + *dc.SubjectID
		}
		l := label[key]
		if l == "" {
			l = key // a door since deleted
		}
		d.Doors = append(d.Doors, doorRow{Label: l, Checkins: dc.Checkins})
	}
	d.Chart = salesChart(d.Sales, tz, now)
	return d, nil
}

// salesChart draws paid orders over time as an SVG bar chart with a
// time axis (server rendered: no script, no external library): hourly
// bars over at least the last day, daily bars once the sales span more
// than two days; ticks and labels in the event's timezone; the y axis
// says the peak.
func salesChart(sales []event.SalesBucket, tz string, now time.Time) template.HTML {
	if len(sales) == 0 {
		return ""
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		loc = time.UTC
	}
	const w, h, left, right, top, bottom = 640, 200, 34, 10, 12, 34
	end := now.Truncate(time.Hour).Add(time.Hour)
	if last := sales[len(sales)-1].Start.Time.Add(time.Hour); last.After(end) {
		end = last
	}
	start := sales[0].Start.Time
	if end.Sub(start) < 24*time.Hour {
		start = end.Add(-24 * time.Hour)
	}
	step, label, tickEvery := time.Hour, "15:00", 6
	if end.Sub(start) > 48*time.Hour {
		step, label, tickEvery = 24*time.Hour, "2 Jan", 1
		y, m, d := start.In(loc).Date()
		start = time.Date(y, m, d, 0, 0, 0, 0, loc)
	}
	var counts []int
	var starts []time.Time
	for t := start; t.Before(end); {
		next := t.Add(step)
		if step == 24*time.Hour {
			y, m, d := t.In(loc).Date()
			next = time.Date(y, m, d+1, 0, 0, 0, 0, loc)
		}
		n := 0
		for _, b := range sales {
			if !b.Start.Time.Before(t) && b.Start.Time.Before(next) {
				n += b.Orders
			}
		}
		counts, starts = append(counts, n), append(starts, t)
		t = next
	}
	if len(counts) > 31 && step == 24*time.Hour {
		tickEvery = (len(counts) + 9) / 10
	}
	peak, total := 1, 0
	for _, n := range counts {
		peak, total = max(peak, n), total+n
	}
	unit := "hour"
	if step == 24*time.Hour {
		unit = "day"
	}
	plotW, plotH := float64(w-left-right), float64(h-top-bottom)
	bw := plotW / float64(len(counts))
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-labelledby="chart-t"><title id="chart-t">Paid orders per %s, %s to %s (%s): %d in all, at most %d in one %s</title>`,
		w, h, unit, starts[0].In(loc).Format("2 Jan 15:04"), end.In(loc).Format("2 Jan 15:04"), tz, total, peak, unit)
	// Axes: the baseline and the y axis with 0 and the peak.
	fmt.Fprintf(&sb, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="currentColor" stroke-width="1"/>`, left, h-bottom, w-right, h-bottom)
	fmt.Fprintf(&sb, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="currentColor" stroke-width="1"/>`, left, top, left, h-bottom)
	fmt.Fprintf(&sb, `<text x="%d" y="%d" text-anchor="end">%d</text><text x="%d" y="%d" text-anchor="end">0</text>`, left-4, top+8, peak, left-4, h-bottom)
	fmt.Fprintf(&sb, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="currentColor" stroke-opacity=".2"/>`, left, top, w-right, top)
	for i, n := range counts {
		x := float64(left) + float64(i)*bw
		if n > 0 {
			bh := plotH * float64(n) / float64(peak)
			fmt.Fprintf(&sb, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="var(--pri)"><title>%s: %d</title></rect>`,
				x+bw*0.1, float64(h-bottom)-bh, bw*0.8, bh, starts[i].In(loc).Format("Mon 2 Jan 15:04"), n)
		}
		t := starts[i].In(loc)
		if (step == time.Hour && t.Hour()%tickEvery == 0) || (step == 24*time.Hour && i%tickEvery == 0) {
			fmt.Fprintf(&sb, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="currentColor"/>`, x, h-bottom, x, h-bottom+4)
			text := t.Format(label)
			if step == time.Hour && t.Hour() == 0 {
				text = t.Format("2 Jan")
			}
			fmt.Fprintf(&sb, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, x, h-bottom+16, text)
		}
	}
	fmt.Fprintf(&sb, `<text x="%d" y="%d" text-anchor="end">%s</text></svg>`, w-right, h-4, "per "+unit+", "+tz)
	return template.HTML(sb.String())
}

// dashboardPage shows an event's sales counters; its live part refreshes
// by polling dashboardLive.
func (c *pages) dashboardPage(r *shell.Req) error {
	v := &shell.View{Title: "Dashboard"}
	eventID, _, err := c.EventHead(r, v, shell.PermRead)
	if err != nil {
		return err
	}
	d, err := c.dashboard(eventID)
	if err != nil {
		return err
	}
	v.Any = d
	c.Render(r.RC, 200, "dashboard", v)
	return nil
}

// dashboardLive is the dashboard's live fragment (HTML, no layout).
func (c *pages) dashboardLive(r *shell.Req) error {
	eventID, _, err := r.EventUnit(shell.PermRead)
	if err != nil {
		return err
	}
	d, err := c.dashboard(eventID)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := c.Tmpl["dashboard"].ExecuteTemplate(&buf, "live", d); err != nil {
		return err
	}
	c.Headers(r.RC)
	r.RC.SetContentType("text/html; charset=utf-8")
	r.RC.SetBody(buf.Bytes())
	return nil
}
