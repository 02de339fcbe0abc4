package eventwork

import (
	"bytes"
	"encoding/csv"

	"ticketd/event"
	"ticketd/http/console/shell"
)

// codesData is the redemption codes page.
type codesData struct {
	Promos []event.PromotionCode
	Codes  []event.RedemptionCode
	Types  []event.TicketType
	Next   string
	Names  map[string]string
}

// codesPage lists the event's redemption codes in mint order, with the
// API's cursors, and the form that mints a batch.
func (c *pages) codesPage(r *shell.Req) error {
	return c.showCodes(r, &shell.View{}, 200)
}

func (c *pages) showCodes(r *shell.Req, v *shell.View, status int) error {
	v.Title = "Redemption codes"
	eventID, _, err := c.EventHead(r, v, shell.PermRead)
	if err != nil {
		return err
	}
	list, err := shell.AskOp(c.Console, eventID, event.ListCodes{Limit: shell.ListLimit, Cursor: string(r.RC.QueryArgs().Peek("cursor"))})
	if err != nil {
		return err
	}
	types, err := shell.AskOp(c.Console, eventID, event.ListTicketTypes{Limit: 100})
	if err != nil {
		return err
	}
	promos, err := shell.AskOp(c.Console, eventID, event.ListPromotionCodes{Limit: 100})
	if err != nil {
		return err
	}
	d := codesData{Promos: promos.Data, Codes: list.Data, Types: types.Data, Names: map[string]string{}}
	for _, t := range types.Data {
		d.Names[t.ID] = t.Name
	}
	if list.HasMore && list.NextCursor != nil {
		d.Next = *list.NextCursor
	}
	if v.Form == nil {
		v.Form = map[string]string{"count": "10"}
	}
	if v.Errors == nil {
		v.Errors = map[string]string{}
	}
	v.Any = d
	c.Render(r.RC, status, "codes", v)
	return nil
}

// mintCodes mints a batch of codes for a ticket type (the API's rules).
func (c *pages) mintCodes(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	f := map[string]string{}
	for _, k := range []string{"registrationTypeId", "count", "label", "maxUses"} {
		f[k] = shell.Form(r.RC, k)
	}
	v := &shell.View{Form: f, Errors: map[string]string{}}
	body := map[string]any{"registrationTypeId": f["registrationTypeId"], "label": f["label"]}
	if f["count"] != "" {
		body["count"] = shell.JSONNumberOr(f["count"])
	}
	if f["maxUses"] != "" {
		body["maxUses"] = shell.JSONNumberOr(f["maxUses"])
	}
	var cmd event.MintCodes
	if err = shell.BindForm(body, &cmd); err == nil {
		var res event.MintResult
		if res, err = shell.AskOp(c.Console, eventID, cmd); err == nil {
			r.Audit("mintRedemptionCodes", unitID, map[string]string{"eventId": eventID}, res)
			return shell.Redirect(r, "/console/events/"+eventID+"/codes")
		}
	}
	if shell.IsNotFound(err) {
		v.Errors["registrationTypeId"] = "It must be a ticket type of this event."
		return c.showCodes(r, v, 400)
	}
	if !shell.FieldErrors(err, v) {
		return err
	}
	return c.showCodes(r, v, 400)
}

// disableCode disables one code.
func (c *pages) disableCode(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	id := shell.Param(r.RC, "codeId")
	res, err := shell.AskOp(c.Console, eventID, event.DisableCode{ID: id})
	if err != nil {
		return err
	}
	r.Audit("disableRedemptionCode", unitID, map[string]string{"eventId": eventID, "codeId": id}, res)
	return shell.Redirect(r, "/console/events/"+eventID+"/codes")
}

// codesCSV downloads every code of the event.
func (c *pages) codesCSV(r *shell.Req) error {
	eventID, _, err := r.EventUnit(shell.PermRead)
	if err != nil {
		return err
	}
	names, err := c.typeNames(eventID)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	_ = w.Write([]string{"code", "ticketType", "label", "uses", "maxUses", "status", "expiresAt"})
	cursor, n := "", 0
	for n < shell.CSVMax {
		list, err := shell.AskOp(c.Console, eventID, event.ListCodes{Limit: 100, Cursor: cursor})
		if err != nil {
			return err
		}
		for _, k := range list.Data {
			maxUses, exp := "", ""
			if k.MaxUses != nil {
				maxUses = shell.Itoa(*k.MaxUses)
			}
			if k.ExpiresAt != nil {
				exp = k.ExpiresAt.UTC().Format("2006-01-02T15:04:05Z")
			}
			_ = w.Write(safeRow(k.Code, names[k.RegistrationTypeID], shell.Deref(k.Label), shell.Itoa(k.Uses), maxUses, k.Status, exp))
			n++
		}
		if !list.HasMore || list.NextCursor == nil {
			break
		}
		cursor = *list.NextCursor
	}
	w.Flush()
	sendCSV(r, eventID+"-codes.csv", buf.Bytes())
	return nil
}

// createPromo creates a promotion code: a percentage or an amount off
// each unit, optionally bounded in uses and time (in the event's
// timezone).
func (c *pages) createPromo(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	f := map[string]string{}
	for _, k := range []string{"promoCode", "kind", "off", "promoMaxUses", "promoExpiresAt"} {
		f[k] = shell.Form(r.RC, k)
	}
	v := &shell.View{Form: f, Errors: map[string]string{}}
	ev, err := shell.AskOp(c.Console, eventID, event.GetEvent{})
	if err != nil {
		return err
	}
	body := map[string]any{"code": f["promoCode"]}
	if f["kind"] == "amount" {
		body["amountOff"] = shell.MoneyField(f["off"])
	} else {
		body["percentOff"] = shell.JSONNumberOr(f["off"])
	}
	if f["promoMaxUses"] != "" {
		body["maxUses"] = shell.JSONNumberOr(f["promoMaxUses"])
	}
	if t := shell.LocalTime(v, "promoExpiresAt", f["promoExpiresAt"], ev.Timezone); t != nil {
		body["expiresAt"] = *t
	}
	var cmd event.CreatePromotionCode
	if err = shell.BindForm(body, &cmd); err == nil && len(v.Errors) == 0 {
		var p event.PromotionCode
		if p, err = shell.AskOp(c.Console, eventID, cmd); err == nil {
			r.Audit("createPromotionCode", unitID, map[string]string{"eventId": eventID, "id": p.ID}, p)
			return shell.Redirect(r, "/console/events/"+eventID+"/codes")
		}
	}
	if err != nil && !shell.FieldErrors(err, v) {
		return err
	}
	for from, to := range map[string]string{"code": "promoCode", "percentOff": "off", "amountOff": "off", "maxUses": "promoMaxUses", "expiresAt": "promoExpiresAt"} {
		if m, ok := v.Errors[from]; ok {
			v.Errors[to] = m
			delete(v.Errors, from)
		}
	}
	return c.showCodes(r, v, 400)
}

// disablePromo disables a promotion code (it stays listed).
func (c *pages) disablePromo(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	id := shell.Param(r.RC, "promoId")
	p, err := shell.AskOp(c.Console, eventID, event.UpdatePromotionCode{ID: id, Active: event.Some(false)})
	if err != nil {
		return err
	}
	r.Audit("disablePromotionCode", unitID, map[string]string{"eventId": eventID, "id": id}, p)
	return shell.Redirect(r, "/console/events/"+eventID+"/codes")
}
