package console

import (
	"bytes"
	"fmt"
	"html/template"
	"strings"
	"time"

	"ticketd/event"
)

// dashData is the live part of an event's dashboard: the machine's
// counters (event.GetDashboard, each ticket type's availability), never a
// scan of registrations or orders, so a poll costs a few actor reads.
type dashData struct {
	Types     []ticketTypeRow
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

func (c *Console) dashboard(eventID string) (*dashData, error) {
	list, err := askOp(c, eventID, event.ListTicketTypes{Limit: 100})
	if err != nil {
		return nil, err
	}
	d := &dashData{}
	for _, tt := range list.Data {
		av, err := askOp(c, eventID, event.GetAvailability{ID: tt.ID})
		if err != nil {
			return nil, err
		}
		d.Types = append(d.Types, ticketTypeRow{TicketType: tt, Avail: av})
		if av.Capacity == nil {
			d.Unlimited = true
		} else {
			d.Capacity += *av.Capacity
		}
	}
	if d.Dashboard, err = askOp(c, eventID, event.GetDashboard{}); err != nil {
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
	d.Chart = salesChart(d.Sales)
	return d, nil
}

// salesChart draws paid orders per hour as an SVG bar chart (server
// rendered: no script, no external library).
func salesChart(sales []event.SalesBucket) template.HTML {
	if len(sales) == 0 {
		return ""
	}
	const w, h, pad = 600, 160, 20
	first := sales[0].Start.Time
	last := sales[len(sales)-1].Start.Time
	hours := int(last.Sub(first)/time.Hour) + 1
	peak := 1
	for _, b := range sales {
		peak = max(peak, b.Orders)
	}
	bw := float64(w-2*pad) / float64(hours)
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-labelledby="chart-t"><title id="chart-t">Paid orders per hour, %s to %s UTC, peak %d</title>`,
		w, h, first.Format("2 Jan 15:04"), last.Add(time.Hour).Format("2 Jan 15:04"), peak)
	fmt.Fprintf(&sb, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="currentColor" stroke-width="1"/>`, pad, h-pad, w-pad, h-pad)
	for _, b := range sales {
		i := int(b.Start.Time.Sub(first) / time.Hour)
		bh := float64(h-2*pad) * float64(b.Orders) / float64(peak)
		fmt.Fprintf(&sb, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="var(--pri)"><title>%s UTC: %d</title></rect>`,
			float64(pad)+float64(i)*bw+bw*0.1, float64(h-pad)-bh, bw*0.8, bh, b.Start.Time.Format("2 Jan 15:04"), b.Orders)
	}
	fmt.Fprintf(&sb, `<text x="%d" y="%d" font-size="11">%d</text></svg>`, 2, pad, peak)
	return template.HTML(sb.String())
}

// dashboardPage shows an event's sales counters; its live part refreshes
// by polling dashboardLive.
func (c *Console) dashboardPage(r *req) error {
	v := &view{Title: "Dashboard"}
	eventID, _, err := c.eventHead(r, v, permRead)
	if err != nil {
		return err
	}
	d, err := c.dashboard(eventID)
	if err != nil {
		return err
	}
	v.Any = d
	c.render(r.rc, 200, "dashboard", v)
	return nil
}

// dashboardLive is the dashboard's live fragment (HTML, no layout).
func (c *Console) dashboardLive(r *req) error {
	eventID, _, err := r.eventUnit(permRead)
	if err != nil {
		return err
	}
	d, err := c.dashboard(eventID)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := c.tmpl["dashboard"].ExecuteTemplate(&buf, "live", d); err != nil {
		return err
	}
	c.headers(r.rc)
	r.rc.SetContentType("text/html; charset=utf-8")
	r.rc.SetBody(buf.Bytes())
	return nil
}
