package console

import (
	"bytes"

	"ticketd/event"
)

// dashData is the live part of an event's dashboard: each ticket type's
// counters as the machine keeps them (availability), never a scan of
// registrations or orders, so it costs one actor read per ticket type.
type dashData struct {
	Types                            []ticketTypeRow
	Sold, Held, Waitlisted, Capacity int
	Unlimited                        bool
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
		d.Sold += av.Confirmed
		d.Held += av.Held
		d.Waitlisted += av.Waitlisted
		if av.Capacity == nil {
			d.Unlimited = true
		} else {
			d.Capacity += *av.Capacity
		}
	}
	return d, nil
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
