package console

import (
	"errors"

	"ticketd/event"
)

func init() {
	pageNames = append(pageNames, "promos")
}

func (c *Console) promoRoutes() []route {
	return []route{
		{"GET", "/console/events/{eventId}/promotions", c.promosPage},
		{"POST", "/console/events/{eventId}/promotions", c.createPromo},
		{"POST", "/console/events/{eventId}/promotions/{promoId}/disable", c.disablePromo},
	}
}

// promosData is the promotion codes page: the codes, and the items a new
// code may be limited to.
type promosData struct {
	Codes   []event.PromotionCode
	Types   []event.TicketType
	Addons  []event.Addon
	Bundles []event.Bundle
	Names   map[string]string
	Next    string
	Scope   map[string]bool // the items ticked on a refused form
}

// promosPage lists the event's promotion codes in creation order with
// the API's cursors, and the form that creates one.
func (c *Console) promosPage(r *req) error {
	return c.showPromos(r, &view{}, 200)
}

func (c *Console) showPromos(r *req, v *view, status int) error {
	v.Title = "Promotion codes"
	eventID, _, err := c.eventHead(r, v, permRead)
	if err != nil {
		return err
	}
	list, err := askOp(c, eventID, event.ListPromotionCodes{Limit: listLimit, Cursor: string(r.rc.QueryArgs().Peek("cursor"))})
	if err != nil {
		return err
	}
	d := promosData{Codes: list.Data, Names: map[string]string{}, Scope: map[string]bool{}}
	if list.HasMore && list.NextCursor != nil {
		d.Next = *list.NextCursor
	}
	if err := c.scopeItems(eventID, &d); err != nil {
		return err
	}
	if v.Form == nil {
		v.Form = map[string]string{"kind": "percent"}
	}
	if v.Errors == nil {
		v.Errors = map[string]string{}
	}
	for _, id := range r.rc.PostArgs().PeekMulti("scope") {
		d.Scope[string(id)] = true
	}
	v.Any = d
	c.render(r.rc, status, "promos", v)
	return nil
}

// scopeItems loads the items a code may cover (the first 100 of each
// kind: the core bounds a scope to 100 of each).
func (c *Console) scopeItems(eventID string, d *promosData) error {
	types, err := askOp(c, eventID, event.ListTicketTypes{Limit: 100})
	if err != nil {
		return err
	}
	addons, err := askOp(c, eventID, event.ListAddons{Limit: 100})
	if err != nil {
		return err
	}
	bundles, err := askOp(c, eventID, event.ListBundles{Limit: 100})
	if err != nil {
		return err
	}
	d.Types, d.Addons, d.Bundles = types.Data, addons.Data, bundles.Data
	for _, t := range types.Data {
		d.Names[t.ID] = t.Name
	}
	for _, a := range addons.Data {
		d.Names[a.ID] = a.Name
	}
	for _, b := range bundles.Data {
		d.Names[b.ID] = b.Name
	}
	return nil
}

// createPromo creates a promotion code: a percentage or an amount off
// each covered item, optionally limited in uses, time and items.
func (c *Console) createPromo(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	ev, err := askOp(c, eventID, event.GetEvent{})
	if err != nil {
		return err
	}
	f := map[string]string{}
	for _, k := range []string{"code", "kind", "value", "maxUses", "expiresAt"} {
		f[k] = form(r.rc, k)
	}
	v := &view{Form: f, Errors: map[string]string{}}
	body := map[string]any{"code": f["code"]}
	off := "percentOff"
	if f["kind"] == "amount" {
		off = "amountOff"
	}
	if f["value"] != "" {
		body[off] = jsonNumberOr(f["value"])
	}
	if f["maxUses"] != "" {
		body["maxUses"] = jsonNumberOr(f["maxUses"])
	}
	if t := localTime(v, "expiresAt", f["expiresAt"], ev.Timezone); t != nil {
		body["expiresAt"] = *t
	}
	scope := map[string][]string{"ticketTypeIds": {}, "addonIds": {}, "bundleIds": {}}
	var d promosData
	d.Names = map[string]string{}
	if err := c.scopeItems(eventID, &d); err != nil {
		return err
	}
	kinds := map[string]string{}
	for _, t := range d.Types {
		kinds[t.ID] = "ticketTypeIds"
	}
	for _, a := range d.Addons {
		kinds[a.ID] = "addonIds"
	}
	for _, b := range d.Bundles {
		kinds[b.ID] = "bundleIds"
	}
	for _, id := range r.rc.PostArgs().PeekMulti("scope") {
		if k, ok := kinds[string(id)]; ok {
			scope[k] = append(scope[k], string(id))
		}
	}
	body["appliesTo"] = scope
	var cmd event.CreatePromotionCode
	if err = bindForm(body, &cmd); err == nil && len(v.Errors) == 0 {
		var p event.PromotionCode
		if p, err = askOp(c, eventID, cmd); err == nil {
			r.audit("createPromotionCode", unitID, map[string]string{"eventId": eventID, "promotionCodeId": p.ID}, p)
			return redirect(r, "/console/events/"+eventID+"/promotions")
		}
	}
	var ee *event.Error
	switch {
	case errors.As(err, &ee) && ee.Code == event.AlreadyExists:
		v.Errors["code"] = "It is already a promotion code of this event."
	case err != nil && !fieldErrors(err, v):
		return err
	}
	for _, k := range []string{"percentOff", "amountOff"} {
		if msg, ok := v.Errors[k]; ok {
			v.Errors["value"] = msg
			delete(v.Errors, k)
		}
	}
	if msg, ok := v.Errors["appliesTo"]; ok {
		v.Errors["scope"] = msg
	}
	return c.showPromos(r, v, 400)
}

// disablePromo disables a promotion code (codes are never deleted: it
// stays listed as disabled).
func (c *Console) disablePromo(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	id := param(r.rc, "promoId")
	p, err := askOp(c, eventID, event.DeletePromotionCode{ID: id})
	if err != nil {
		return err
	}
	r.audit("disablePromotionCode", unitID, map[string]string{"eventId": eventID, "promotionCodeId": id}, p)
	return redirect(r, "/console/events/"+eventID+"/promotions")
}
