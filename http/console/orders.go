package console

import (
	"bytes"
	"encoding/csv"
	"errors"
	"strings"

	"ticketd/event"
)

// listLimit is the page size of the console's lists; csvMax bounds the
// rows of one CSV download (the lists page through the API's cursors).
const (
	listLimit = 50
	csvMax    = 100_000
)

// eventHead loads what every event page shows above its content.
func (c *Console) eventHead(r *req, v *view, p perm) (eventID, unitID string, err error) {
	eventID, unitID, err = r.eventUnit(p)
	if err != nil {
		return "", "", err
	}
	ev, err := askOp(c, eventID, event.GetEvent{})
	if err != nil {
		return "", "", err
	}
	u, _ := r.dir.Unit(unitID)
	v.req, v.Unit, v.Event = r, &u, &ev
	v.Role = r.role(unitID)
	v.CanWrite = allowed(v.Role, permWrite)
	return eventID, unitID, nil
}

// ordersData is the orders page.
type ordersData struct {
	Orders []event.Order
	Next   string
	Query  string
	Status string
}

// ordersPage lists orders newest first with the API's cursors: a status
// filter, and a search by order number, email or buyer name.
func (c *Console) ordersPage(r *req) error {
	v := &view{Title: "Orders"}
	eventID, _, err := c.eventHead(r, v, permRead)
	if err != nil {
		return err
	}
	args := r.rc.QueryArgs()
	d := ordersData{Query: strings.TrimSpace(string(args.Peek("q"))), Status: string(args.Peek("status"))}
	cmd := event.ListOrders{Email: d.Query, Limit: listLimit, Cursor: string(args.Peek("cursor"))}
	if d.Query != "" && !strings.Contains(d.Query, "@") {
		// An order number is one order; anything else is a buyer's name,
		// matched by the core's list like an email.
		o, err := askOp(c, eventID, event.GetOrder{Ref: d.Query})
		if err == nil {
			d.Orders = []event.Order{o}
		} else if !isNotFound(err) {
			return err
		}
		cmd.Email, cmd.Name = "", d.Query
	}
	if d.Orders == nil {
		if d.Status != "" {
			cmd.Status = d.Status
		}
		list, err := askOp(c, eventID, cmd)
		if err != nil {
			if fieldErrors(err, v) {
				c.render(r.rc, 400, "orders", v)
				return nil
			}
			return err
		}
		d.Orders = list.Data
		if list.HasMore && list.NextCursor != nil {
			d.Next = *list.NextCursor
		}
	}
	v.Any = d
	c.render(r.rc, 200, "orders", v)
	return nil
}

func isNotFound(err error) bool {
	var ee *event.Error
	return errors.As(err, &ee) && ee.Code == event.NotFound
}

// orderData is the order page.
type orderData struct {
	Order  event.Order
	Policy event.RefundPolicy
	Regs   []event.Registration
	Mail   []mailRow // ordermail.go
}

// orderPage shows an order: lines, payment, refunds, and the refund form
// with the event's refund policy.
func (c *Console) orderPage(r *req) error {
	return c.showOrder(r, &view{}, 200)
}

func (c *Console) showOrder(r *req, v *view, status int) error {
	eventID, _, err := c.eventHead(r, v, permRead)
	if err != nil {
		return err
	}
	o, err := askOp(c, eventID, event.GetOrder{Ref: param(r.rc, "orderNumber")})
	if err != nil {
		return err
	}
	pol, err := askOp(c, eventID, event.GetRefundPolicy{})
	if err != nil {
		return err
	}
	d := orderData{Order: o, Policy: pol}
	if d.Mail, err = c.ordersMail(eventID, o); err != nil {
		return err
	}
	if o.RegistrationID != nil {
		if reg, err := askOp(c, eventID, event.GetRegistration{ID: *o.RegistrationID}); err == nil {
			d.Regs = append(d.Regs, reg)
		}
	}
	v.Title, v.Any = "Order "+o.OrderNumber, d
	if v.Form == nil {
		v.Form = map[string]string{}
	}
	if v.Errors == nil {
		v.Errors = map[string]string{}
	}
	c.render(r.rc, status, "order", v)
	return nil
}

// refund refunds a paid order through the payment provider, as the admin
// API's refund does: the policy binds unless "force" is ticked.
func (c *Console) refund(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	num := param(r.rc, "orderNumber")
	f := map[string]string{"amount": form(r.rc, "amount"), "reason": form(r.rc, "reason"), "force": form(r.rc, "force")}
	v := &view{Form: f, Errors: map[string]string{}}
	body := map[string]any{"reason": f["reason"], "force": f["force"] != ""}
	if a := f["amount"]; a != "" {
		body["amount"] = moneyField(a)
	}
	var cmd event.RequestRefund
	if err := bindForm(body, &cmd); err != nil {
		if fieldErrors(err, v) {
			return c.showOrder(r, v, 400)
		}
		return err
	}
	cmd.Ref = num
	start, err := askOp(c, eventID, cmd)
	if err != nil {
		if fieldErrors(err, v) {
			return c.showOrder(r, v, 409)
		}
		return err
	}
	o, perr, err := c.deps.Refunds.Settle(eventID, start)
	if err != nil {
		return err
	}
	r.audit("refundOrder", unitID, map[string]string{"eventId": eventID, "orderNumber": num}, o)
	if perr != nil {
		v.Error = "The payment provider refused the refund: " + perr.Error() + ". It is recorded as failed; you may try again."
		return c.showOrder(r, v, 502)
	}
	return redirect(r, "/console/events/"+eventID+"/orders/"+num)
}

// ordersCSV downloads the event's orders, newest first.
func (c *Console) ordersCSV(r *req) error {
	eventID, _, err := r.eventUnit(permRead)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	// totalAmount is a plain decimal ("1234.50"), never the page's
	// locale form ("1.234,50 €"): spreadsheets and scripts read it.
	_ = w.Write([]string{"orderNumber", "status", "email", "name", "items", "totalAmount", "currency", "createdAt"})
	cursor, n := "", 0
	for n < csvMax {
		list, err := askOp(c, eventID, event.ListOrders{Limit: 100, Cursor: cursor})
		if err != nil {
			return err
		}
		for _, o := range list.Data {
			var items []string
			for _, it := range o.Items {
				items = append(items, it.Name+" x"+itoa(it.Quantity))
			}
			_ = w.Write(safeRow(o.OrderNumber, o.Status, o.Email, deref(o.Name), strings.Join(items, "; "), o.TotalAmount.String(), o.Currency,
				o.CreatedAt.UTC().Format("2006-01-02T15:04:05Z")))
			n++
		}
		if !list.HasMore || list.NextCursor == nil {
			break
		}
		cursor = *list.NextCursor
	}
	w.Flush()
	sendCSV(r, eventID+"-orders.csv", buf.Bytes())
	return nil
}

// attendeesCSV downloads the event's registrations, newest first, one row
// each (the API's cursor pages of ListRegistrations: each page costs the
// same however large the event).
func (c *Console) attendeesCSV(r *req) error {
	eventID, _, err := r.eventUnit(permRead)
	if err != nil {
		return err
	}
	types, err := c.typeNames(eventID)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	_ = w.Write([]string{"email", "name", "ticketType", "status", "checkinCode", "registrationId", "orderId", "createdAt"})
	cursor, n := "", 0
	for n < csvMax {
		list, err := askOp(c, eventID, event.ListRegistrations{Limit: 100, Cursor: cursor})
		if err != nil {
			return err
		}
		for _, g := range list.Data {
			_ = w.Write(safeRow(g.Email, deref(g.Name), types[deref(g.RegistrationTypeID)], g.Status, g.CheckinCode, g.ID,
				deref(g.OrderID), g.CreatedAt.UTC().Format("2006-01-02T15:04:05Z")))
			n++
		}
		if !list.HasMore || list.NextCursor == nil {
			break
		}
		cursor = *list.NextCursor
	}
	w.Flush()
	sendCSV(r, eventID+"-attendees.csv", buf.Bytes())
	return nil
}

// typeNames maps the event's ticket type ids to their names.
func (c *Console) typeNames(eventID string) (map[string]string, error) {
	types, err := askOp(c, eventID, event.ListTicketTypes{Limit: 100})
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, t := range types.Data {
		m[t.ID] = t.Name
	}
	return m, nil
}

func sendCSV(r *req, name string, b []byte) {
	r.c.headers(r.rc)
	r.rc.SetContentType("text/csv; charset=utf-8")
	r.rc.Response.Header.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	r.rc.SetBody(b)
}

// safeRow neutralises cells a spreadsheet would run as a formula (CSV
// injection): a leading =, +, - or @ gets a quote mark.
func safeRow(cells ...string) []string {
	for i, s := range cells {
		if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
			cells[i] = "'" + s
		}
	}
	return cells
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// attendeesData is the attendees page.
type attendeesData struct {
	Regs   []event.Registration
	Types  map[string]string
	Status string
	Query  string
	Next   string
	// CheckedIn is when each listed registration first checked in at the
	// event's door (by registration id).
	CheckedIn map[string]event.Time
}

// Checked is when registration id checked in, "" if not yet.
func (d attendeesData) Checked(id string) *event.Time {
	if t, ok := d.CheckedIn[id]; ok {
		return &t
	}
	return nil
}

// TypeName is the name of a registration's ticket type.
func (d attendeesData) TypeName(id *string) string { return d.Types[deref(id)] }

// attendeesPage lists the event's registrations, newest first, with the
// API's cursors and status filter.
func (c *Console) attendeesPage(r *req) error {
	v := &view{Title: "Attendees"}
	eventID, _, err := c.eventHead(r, v, permRead)
	if err != nil {
		return err
	}
	q := r.rc.QueryArgs()
	d := attendeesData{Status: string(q.Peek("status")), Query: capText(strings.TrimSpace(string(q.Peek("q"))), 320), CheckedIn: map[string]event.Time{}}
	v.Error = string(q.Peek("error")) // a refused action, back from registrationAction
	if len(q.Peek("resent")) > 0 {
		v.Notice = "The ticket email is queued again: it goes out through the mail outbox."
	}
	if d.Types, err = c.typeNames(eventID); err != nil {
		return err
	}
	if d.Query != "" {
		// The door's search: by email, check-in code or name.
		if d.Regs, err = c.search(eventID, d.Query); err != nil {
			return err
		}
	} else {
		list, err := askOp(c, eventID, event.ListRegistrations{Status: d.Status, Limit: listLimit, Cursor: string(q.Peek("cursor"))})
		if err != nil {
			if fieldErrors(err, v) {
				c.render(r.rc, 400, "attendees", v)
				return nil
			}
			return err
		}
		d.Regs = list.Data
		if list.HasMore && list.NextCursor != nil {
			d.Next = *list.NextCursor
		}
	}
	for _, reg := range d.Regs {
		ci, err := askOp(c, eventID, event.ListCheckins{RegistrationID: reg.ID, SubjectType: "event", Limit: 1})
		if err != nil {
			return err
		}
		if len(ci.Data) > 0 {
			d.CheckedIn[reg.ID] = ci.Data[0].CheckedInAt
		}
	}
	v.Any = d
	c.render(r.rc, 200, "attendees", v)
	return nil
}
