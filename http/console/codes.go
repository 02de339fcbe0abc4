package console

import (
	"bytes"
	"encoding/csv"

	"ticketd/event"
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
func (c *Console) codesPage(r *req) error {
	return c.showCodes(r, &view{}, 200)
}

func (c *Console) showCodes(r *req, v *view, status int) error {
	v.Title = "Redemption codes"
	eventID, _, err := c.eventHead(r, v, permRead)
	if err != nil {
		return err
	}
	list, err := askOp(c, eventID, event.ListCodes{Limit: listLimit, Cursor: string(r.rc.QueryArgs().Peek("cursor"))})
	if err != nil {
		return err
	}
	types, err := askOp(c, eventID, event.ListTicketTypes{Limit: 100})
	if err != nil {
		return err
	}
	promos, err := askOp(c, eventID, event.ListPromotionCodes{Limit: 100})
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
	c.render(r.rc, status, "codes", v)
	return nil
}

// mintCodes mints a batch of codes for a ticket type (the API's rules).
func (c *Console) mintCodes(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	f := map[string]string{}
	for _, k := range []string{"registrationTypeId", "count", "label", "maxUses"} {
		f[k] = form(r.rc, k)
	}
	v := &view{Form: f, Errors: map[string]string{}}
	body := map[string]any{"registrationTypeId": f["registrationTypeId"], "label": f["label"]}
	if f["count"] != "" {
		body["count"] = jsonNumberOr(f["count"])
	}
	if f["maxUses"] != "" {
		body["maxUses"] = jsonNumberOr(f["maxUses"])
	}
	var cmd event.MintCodes
	if err = bindForm(body, &cmd); err == nil {
		var res event.MintResult
		if res, err = askOp(c, eventID, cmd); err == nil {
			r.audit("mintRedemptionCodes", unitID, map[string]string{"eventId": eventID}, res)
			return redirect(r, "/console/events/"+eventID+"/codes")
		}
	}
	if isNotFound(err) {
		v.Errors["registrationTypeId"] = "It must be a ticket type of this event."
		return c.showCodes(r, v, 400)
	}
	if !fieldErrors(err, v) {
		return err
	}
	return c.showCodes(r, v, 400)
}

// disableCode disables one code.
func (c *Console) disableCode(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	id := param(r.rc, "codeId")
	res, err := askOp(c, eventID, event.DisableCode{ID: id})
	if err != nil {
		return err
	}
	r.audit("disableRedemptionCode", unitID, map[string]string{"eventId": eventID, "codeId": id}, res)
	return redirect(r, "/console/events/"+eventID+"/codes")
}

// codesCSV downloads every code of the event.
func (c *Console) codesCSV(r *req) error {
	eventID, _, err := r.eventUnit(permRead)
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
	for n < csvMax {
		list, err := askOp(c, eventID, event.ListCodes{Limit: 100, Cursor: cursor})
		if err != nil {
			return err
		}
		for _, k := range list.Data {
			maxUses, exp := "", ""
			if k.MaxUses != nil {
				maxUses = itoa(*k.MaxUses)
			}
			if k.ExpiresAt != nil {
				exp = k.ExpiresAt.UTC().Format("2006-01-02T15:04:05Z")
			}
			_ = w.Write(safeRow(k.Code, names[k.RegistrationTypeID], deref(k.Label), itoa(k.Uses), maxUses, k.Status, exp))
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
func (c *Console) createPromo(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	f := map[string]string{}
	for _, k := range []string{"promoCode", "kind", "off", "promoMaxUses", "promoExpiresAt"} {
		f[k] = form(r.rc, k)
	}
	v := &view{Form: f, Errors: map[string]string{}}
	ev, err := askOp(c, eventID, event.GetEvent{})
	if err != nil {
		return err
	}
	body := map[string]any{"code": f["promoCode"]}
	if f["kind"] == "amount" {
		body["amountOff"] = moneyField(f["off"])
	} else {
		body["percentOff"] = jsonNumberOr(f["off"])
	}
	if f["promoMaxUses"] != "" {
		body["maxUses"] = jsonNumberOr(f["promoMaxUses"])
	}
	if t := localTime(v, "promoExpiresAt", f["promoExpiresAt"], ev.Timezone); t != nil {
		body["expiresAt"] = *t
	}
	var cmd event.CreatePromotionCode
	if err = bindForm(body, &cmd); err == nil && len(v.Errors) == 0 {
		var p event.PromotionCode
		if p, err = askOp(c, eventID, cmd); err == nil {
			r.audit("createPromotionCode", unitID, map[string]string{"eventId": eventID, "id": p.ID}, p)
			return redirect(r, "/console/events/"+eventID+"/codes")
		}
	}
	if err != nil && !fieldErrors(err, v) {
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
func (c *Console) disablePromo(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	id := param(r.rc, "promoId")
	p, err := askOp(c, eventID, event.UpdatePromotionCode{ID: id, Active: event.Some(false)})
	if err != nil {
		return err
	}
	r.audit("disablePromotionCode", unitID, map[string]string{"eventId": eventID, "id": id}, p)
	return redirect(r, "/console/events/"+eventID+"/codes")
}
