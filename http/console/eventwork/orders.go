package eventwork

import (
	"bytes"
	"context"
	"encoding/csv"
	"strings"

	"ticketd/event"
	"ticketd/http/console/shell"
)

// ordersData is the orders page.
type ordersData struct {
	Orders []event.Order
	Next   string
	Query  string
	Status string
}

// ordersPage lists orders newest first with the API's cursors: a status
// filter, and a search by order number, email or buyer name.
func (c *pages) ordersPage(r *shell.Req) error {
	v := &shell.View{Title: "Orders"}
	eventID, _, err := c.EventHead(r, v, shell.PermRead)
	if err != nil {
		return err
	}
	args := r.RC.QueryArgs()
	d := ordersData{Query: strings.TrimSpace(string(args.Peek("q"))), Status: string(args.Peek("status"))}
	cmd := event.ListOrders{Email: d.Query, Limit: shell.ListLimit, Cursor: string(args.Peek("cursor"))}
	if d.Query != "" && !strings.Contains(d.Query, "@") {
		// An order number is one order; anything else is a buyer's name,
		// matched by the core's list like an email.
		o, err := shell.AskOp(c.Console, eventID, event.GetOrder{Ref: d.Query})
		if err == nil {
			d.Orders = []event.Order{o}
		} else if !shell.IsNotFound(err) {
			return err
		}
		cmd.Email, cmd.Name = "", d.Query
	}
	if d.Orders == nil {
		if d.Status != "" {
			cmd.Status = d.Status
		}
		list, err := shell.AskOp(c.Console, eventID, cmd)
		if err != nil {
			if shell.FieldErrors(err, v) {
				c.Render(r.RC, 400, "orders", v)
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
	c.Render(r.RC, 200, "orders", v)
	return nil
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
func (c *pages) orderPage(r *shell.Req) error {
	return c.showOrder(r, &shell.View{}, 200)
}

func (c *pages) showOrder(r *shell.Req, v *shell.View, status int) error {
	eventID, _, err := c.EventHead(r, v, shell.PermRead)
	if err != nil {
		return err
	}
	o, err := shell.AskOp(c.Console, eventID, event.GetOrder{Ref: shell.Param(r.RC, "orderNumber")})
	if err != nil {
		return err
	}
	pol, err := shell.AskOp(c.Console, eventID, event.GetRefundPolicy{})
	if err != nil {
		return err
	}
	d := orderData{Order: o, Policy: pol}
	if d.Mail, err = c.ordersMail(eventID, o); err != nil {
		return err
	}
	if o.RegistrationID != nil {
		if reg, err := shell.AskOp(c.Console, eventID, event.GetRegistration{ID: *o.RegistrationID}); err == nil {
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
	c.Render(r.RC, status, "order", v)
	return nil
}

// refund refunds a paid order through the payment provider, as the admin
// API's refund does: the policy binds unless "force" is ticked.
func (c *pages) refund(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	num := shell.Param(r.RC, "orderNumber")
	f := map[string]string{"amount": shell.Form(r.RC, "amount"), "reason": shell.Form(r.RC, "reason"), "force": shell.Form(r.RC, "force")}
	v := &shell.View{Form: f, Errors: map[string]string{}}
	body := map[string]any{"reason": f["reason"], "force": f["force"] != ""}
	if a := f["amount"]; a != "" {
		body["amount"] = shell.MoneyField(a)
	}
	var cmd event.RequestRefund
	if err := shell.BindForm(body, &cmd); err != nil {
		if shell.FieldErrors(err, v) {
			return c.showOrder(r, v, 400)
		}
		return err
	}
	cmd.Ref = num
	start, err := shell.AskOp(c.Console, eventID, cmd)
	if err != nil {
		if shell.FieldErrors(err, v) {
			return c.showOrder(r, v, 409)
		}
		return err
	}
	o, perr, err := c.Ops.Refunds().Settle(eventID, start)
	if err != nil {
		return err
	}
	r.Audit("refundOrder", unitID, map[string]string{"eventId": eventID, "orderNumber": num}, o)
	if perr != nil {
		v.Error = "The payment provider refused the refund: " + perr.Error() + ". It is recorded as failed; you may try again."
		return c.showOrder(r, v, 502)
	}
	return shell.Redirect(r, "/console/events/"+eventID+"/orders/"+num)
}

// cancelOrder cancels an open or awaiting-payment order: the layer's one
// cancel, the API's, which also closes the order's hosted payment page at
// once. A paid order is refused (refund it instead).
func (c *pages) cancelOrder(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	num := shell.Param(r.RC, "orderNumber")
	o, err := c.Console.Ops.CancelOrder(context.Background(), eventID, event.CancelOrder{Ref: num})
	if err != nil {
		v := &shell.View{Errors: map[string]string{}}
		if shell.FieldErrors(err, v) {
			return c.showOrder(r, v, 409)
		}
		return err
	}
	r.Audit("cancelOrder", unitID, map[string]string{"eventId": eventID, "orderNumber": num}, o)
	return shell.Redirect(r, "/console/events/"+eventID+"/orders/"+num)
}

// ordersCSV downloads the event's orders, newest first.
func (c *pages) ordersCSV(r *shell.Req) error {
	eventID, _, err := r.EventUnit(shell.PermRead)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	// totalAmount is a plain decimal ("1234.50"), never the page's
	// locale form ("1.234,50 €"): spreadsheets and scripts read it.
	_ = w.Write([]string{"orderNumber", "status", "email", "name", "items", "totalAmount", "currency", "createdAt"})
	cursor, n := "", 0
	for n < shell.CSVMax {
		list, err := shell.AskOp(c.Console, eventID, event.ListOrders{Limit: 100, Cursor: cursor})
		if err != nil {
			return err
		}
		for _, o := range list.Data {
			var items []string
			for _, it := range o.Items {
				items = append(items, it.Name+" x"+shell.Itoa(it.Quantity))
			}
			_ = w.Write(safeRow(o.OrderNumber, o.Status, o.Email, shell.Deref(o.Name), strings.Join(items, "; "), o.TotalAmount.String(), o.Currency,
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
func (c *pages) attendeesCSV(r *shell.Req) error {
	eventID, _, err := r.EventUnit(shell.PermRead)
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
	for n < shell.CSVMax {
		list, err := shell.AskOp(c.Console, eventID, event.ListRegistrations{Limit: 100, Cursor: cursor})
		if err != nil {
			return err
		}
		for _, g := range list.Data {
			_ = w.Write(safeRow(g.Email, shell.Deref(g.Name), types[shell.Deref(g.RegistrationTypeID)], g.Status, g.CheckinCode, g.ID,
				shell.Deref(g.OrderID), g.CreatedAt.UTC().Format("2006-01-02T15:04:05Z")))
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
func (c *pages) typeNames(eventID string) (map[string]string, error) {
	types, err := shell.AskOp(c.Console, eventID, event.ListTicketTypes{Limit: 100})
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, t := range types.Data {
		m[t.ID] = t.Name
	}
	return m, nil
}

func sendCSV(r *shell.Req, name string, b []byte) {
	r.Console.Headers(r.RC)
	r.RC.SetContentType("text/csv; charset=utf-8")
	r.RC.Response.Header.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	r.RC.SetBody(b)
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
func (d attendeesData) TypeName(id *string) string { return d.Types[shell.Deref(id)] }

// attendeesPage lists the event's registrations, newest first, with the
// API's cursors and status filter.
func (c *pages) attendeesPage(r *shell.Req) error {
	v := &shell.View{Title: "Attendees"}
	eventID, _, err := c.EventHead(r, v, shell.PermRead)
	if err != nil {
		return err
	}
	q := r.RC.QueryArgs()
	d := attendeesData{Status: string(q.Peek("status")), Query: shell.CapText(strings.TrimSpace(string(q.Peek("q"))), 320), CheckedIn: map[string]event.Time{}}
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
		list, err := shell.AskOp(c.Console, eventID, event.ListRegistrations{Status: d.Status, Limit: shell.ListLimit, Cursor: string(q.Peek("cursor"))})
		if err != nil {
			if shell.FieldErrors(err, v) {
				c.Render(r.RC, 400, "attendees", v)
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
		ci, err := shell.AskOp(c.Console, eventID, event.ListCheckins{RegistrationID: reg.ID, SubjectType: "event", Limit: 1})
		if err != nil {
			return err
		}
		if len(ci.Data) > 0 {
			d.CheckedIn[reg.ID] = ci.Data[0].CheckedInAt
		}
	}
	v.Any = d
	c.Render(r.RC, 200, "attendees", v)
	return nil
}

// workRoutes are the signed-in routes of these pages.
func (c *pages) workRoutes() []shell.Route {
	return []shell.Route{
		{Method: "GET", Path: "/console/events/{eventId}/orders", H: c.ordersPage},
		{Method: "GET", Path: "/console/events/{eventId}/orders.csv", H: c.ordersCSV},
		{Method: "GET", Path: "/console/events/{eventId}/orders/{orderNumber}", H: c.orderPage},
		{Method: "POST", Path: "/console/events/{eventId}/orders/{orderNumber}/refund", H: c.refund},
		{Method: "POST", Path: "/console/events/{eventId}/orders/{orderNumber}/cancel", H: c.cancelOrder},
		{Method: "GET", Path: "/console/events/{eventId}/orders/{orderNumber}/emails/{mailId}", H: c.previewMail},
		{Method: "GET", Path: "/console/events/{eventId}/orders/{orderNumber}/emails/{mailId}/html", H: c.mailHTML},
		{Method: "GET", Path: "/console/events/{eventId}/attendees", H: c.attendeesPage},
		{Method: "GET", Path: "/console/events/{eventId}/attendees.csv", H: c.attendeesCSV},
		{Method: "POST", Path: "/console/events/{eventId}/registrations/{registrationId}/{action}", H: c.registrationAction},
		{Method: "GET", Path: "/console/events/{eventId}/codes", H: c.codesPage},
		{Method: "GET", Path: "/console/events/{eventId}/codes.csv", H: c.codesCSV},
		{Method: "POST", Path: "/console/events/{eventId}/codes", H: c.mintCodes},
		{Method: "POST", Path: "/console/events/{eventId}/codes/{codeId}/disable", H: c.disableCode},
		{Method: "POST", Path: "/console/events/{eventId}/promotion-codes", H: c.createPromo},
		{Method: "POST", Path: "/console/events/{eventId}/promotion-codes/{promoId}/disable", H: c.disablePromo},
		{Method: "GET", Path: "/console/events/{eventId}/door", H: c.doorPage},
		{Method: "POST", Path: "/console/events/{eventId}/door", H: c.checkin},
		{Method: "GET", Path: "/console/events/{eventId}/devices", H: c.devicesPage},
		{Method: "POST", Path: "/console/events/{eventId}/devices", H: c.createDevice},
		{Method: "POST", Path: "/console/events/{eventId}/devices/{deviceId}/revoke", H: c.revokeDevice},
		{Method: "GET", Path: "/console/events/{eventId}/dashboard", H: c.dashboardPage},
		{Method: "GET", Path: "/console/events/{eventId}/dashboard/live", H: c.dashboardLive},
	}
}
