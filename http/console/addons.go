package console

import (
	"ticketd/event"
)

func init() {
	pageNames = append(pageNames, "addons")
	funcs["dict2"] = func(p *view, row itemRow, k string) itemArgs { return itemArgs{P: p, Row: row, K: k} }
	funcs["newRow"] = func(vals map[string]string, edited bool, errs map[string]string) itemRow {
		if !edited {
			errs = nil
		}
		return itemRow{Vals: vals, Errs: errs}
	}
	funcs["moveLabel"] = func(s string) string {
		switch s {
		case "open":
			return "Open sales"
		case "closed":
			return "Close sales"
		case "archived":
			return "Archive"
		}
		return "Back to draft"
	}
}

// itemArgs is what the add-on page's sub-templates get: the page, a row,
// and a prefix for element ids or the path part of the row's kind.
type itemArgs struct {
	P   *view
	Row itemRow
	K   string
}

// catalogueRoutes are the pages of what an event sells besides tickets
// and how it is described: add-ons and bundles, the program and perks,
// registration forms, translations.
func (c *Console) catalogueRoutes() []route {
	rs := []route{
		{"GET", "/console/events/{eventId}/addons", c.addonsPage},
		{"POST", "/console/events/{eventId}/addons", c.createAddon},
		{"POST", "/console/events/{eventId}/addons/{itemId}", c.updateAddon},
		{"POST", "/console/events/{eventId}/addons/{itemId}/status", c.addonStatus},
		{"POST", "/console/events/{eventId}/bundles", c.createBundle},
		{"POST", "/console/events/{eventId}/bundles/{itemId}", c.updateBundle},
		{"POST", "/console/events/{eventId}/bundles/{itemId}/status", c.bundleStatus},
	}
	rs = append(rs, c.programRoutes()...)
	rs = append(rs, c.formRoutes()...)
	return append(rs, c.translationRoutes()...)
}

// itemRow is an add-on or a bundle with its live availability (capacity
// less sold and held, as the machine counts them) and what its edit form
// shows: the record's values, or what was typed when that form was
// refused.
type itemRow struct {
	ID, Name, Status string
	Price            event.Money
	Capacity         *int
	Sold, Held       int
	Remaining        *int
	Items            []event.BundleItem
	Vals, Errs       map[string]string
}

// Transitions are the lifecycle moves from the row's status, as the core
// allows them: draft -> open <-> closed -> archived.
func (r itemRow) Transitions() []string {
	switch r.Status {
	case "draft":
		return []string{"open"}
	case "open":
		return []string{"closed"}
	case "closed":
		return []string{"open", "archived"}
	}
	return nil
}

// addonsData is the add-ons and bundles page.
type addonsData struct {
	Addons, Bundles []itemRow
	Types           []event.TicketType
	Names           map[string]string // ticket type and add-on names by id
	NextAddons      string
	NextBundles     string
	NewAddon        map[string]string
	NewBundle       map[string]string
}

func remaining(capacity *int, sold, held int) *int {
	if capacity == nil {
		return nil
	}
	n := max(*capacity-sold-held, 0)
	return &n
}

func capVal(capacity *int) string {
	if capacity == nil {
		return ""
	}
	return itoa(*capacity)
}

// addonsPage lists the event's add-ons and bundles with the API's
// cursors, each with its state, availability, edit form and lifecycle
// moves.
func (c *Console) addonsPage(r *req) error {
	return c.showAddons(r, &view{}, 200)
}

// showAddons renders the page; v.Form["edit"] names the refused form
// ("new-addon", "new-bundle" or an item id) that gets v.Form and
// v.Errors back.
func (c *Console) showAddons(r *req, v *view, status int) error {
	v.Title = "Add-ons and bundles"
	eventID, _, err := c.eventHead(r, v, permRead)
	if err != nil {
		return err
	}
	q := r.rc.QueryArgs()
	addons, err := askOp(c, eventID, event.ListAddons{Limit: listLimit, Cursor: string(q.Peek("addons"))})
	if err != nil {
		return err
	}
	bundles, err := askOp(c, eventID, event.ListBundles{Limit: listLimit, Cursor: string(q.Peek("bundles"))})
	if err != nil {
		return err
	}
	types, err := askOp(c, eventID, event.ListTicketTypes{Limit: 100})
	if err != nil {
		return err
	}
	v.typed()
	edit := v.Form["edit"]
	pick := func(id string, own map[string]string) (map[string]string, map[string]string) {
		if id == edit {
			return v.Form, v.Errors
		}
		return own, nil
	}
	d := addonsData{Types: types.Data, Names: map[string]string{}}
	for _, t := range types.Data {
		d.Names[t.ID] = t.Name
	}
	for _, a := range addons.Data {
		d.Names[a.ID] = a.Name
		row := itemRow{ID: a.ID, Name: a.Name, Status: a.Status, Price: a.PriceAmount, Capacity: a.Capacity, Sold: a.Sold,
			Held: a.Held, Remaining: remaining(a.Capacity, a.Sold, a.Held)}
		row.Vals, row.Errs = pick(a.ID, map[string]string{"name": a.Name, "priceAmount": a.PriceAmount.String(), "capacity": capVal(a.Capacity)})
		d.Addons = append(d.Addons, row)
	}
	for _, b := range bundles.Data {
		row := itemRow{ID: b.ID, Name: b.Name, Status: b.Status, Price: b.PriceAmount, Capacity: b.Capacity, Sold: b.Sold,
			Held: b.Held, Remaining: remaining(b.Capacity, b.Sold, b.Held), Items: b.Items}
		own := map[string]string{"name": b.Name, "priceAmount": b.PriceAmount.String(), "capacity": capVal(b.Capacity)}
		for _, it := range b.Items {
			own["q_"+it.ItemID] = itoa(it.Quantity)
		}
		row.Vals, row.Errs = pick(b.ID, own)
		d.Bundles = append(d.Bundles, row)
	}
	if addons.HasMore && addons.NextCursor != nil {
		d.NextAddons = *addons.NextCursor
	}
	if bundles.HasMore && bundles.NextCursor != nil {
		d.NextBundles = *bundles.NextCursor
	}
	d.NewAddon, _ = pick("new-addon", map[string]string{})
	d.NewBundle, _ = pick("new-bundle", map[string]string{})
	v.Any = d
	c.render(r.rc, status, "addons", v)
	return nil
}

// itemForm reads the name, price and capacity fields as the API's JSON:
// an empty capacity is unlimited (null).
func itemForm(r *req, edit string) (map[string]string, map[string]any) {
	f := map[string]string{"edit": edit}
	for _, k := range []string{"name", "priceAmount", "capacity"} {
		f[k] = form(r.rc, k)
	}
	body := map[string]any{"name": f["name"], "capacity": nil}
	if f["priceAmount"] == "" {
		body["priceAmount"] = 0
	} else {
		body["priceAmount"] = moneyField(f["priceAmount"])
	}
	if f["capacity"] != "" {
		body["capacity"] = jsonNumberOr(f["capacity"])
	}
	return f, body
}

// bundleItems reads the quantity fields ("q_" and the item's id) of the
// event's ticket types and add-ons; 0 or empty leaves the item out.
func (c *Console) bundleItems(r *req, eventID string, f map[string]string) ([]map[string]any, error) {
	types, err := askOp(c, eventID, event.ListTicketTypes{Limit: 100})
	if err != nil {
		return nil, err
	}
	addons, err := askOp(c, eventID, event.ListAddons{Limit: 100})
	if err != nil {
		return nil, err
	}
	items := []map[string]any{}
	add := func(kind, id string) {
		k := "q_" + id
		f[k] = form(r.rc, k)
		if f[k] != "" && f[k] != "0" {
			items = append(items, map[string]any{"itemType": kind, "itemId": id, "quantity": jsonNumberOr(f[k])})
		}
	}
	for _, t := range types.Data {
		add(event.ItemRegistrationType, t.ID)
	}
	for _, a := range addons.Data {
		add(event.ItemAddon, a.ID)
	}
	return items, nil
}

// createAddon creates an add-on (as draft, as the API does).
func (c *Console) createAddon(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	f, body := itemForm(r, "new-addon")
	return submit(r, formSubmit[event.CreateAddon, event.Addon]{EventID: eventID, UnitID: unitID, View: &view{Form: f},
		Body: body, Op: "createAddon", Targets: func(a event.Addon) map[string]string {
			return map[string]string{"eventId": eventID, "addonId": a.ID}
		}, Back: "/console/events/" + eventID + "/addons", Show: c.showAddons})
}

// updateAddon changes an add-on's name, price and capacity.
func (c *Console) updateAddon(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	id := param(r.rc, "itemId")
	f, body := itemForm(r, id)
	return submit(r, formSubmit[event.UpdateAddon, event.Addon]{EventID: eventID, UnitID: unitID, View: &view{Form: f},
		Body: body, Prepare: func(cmd *event.UpdateAddon) { cmd.ID = id }, Op: "updateAddon",
		Targets: func(event.Addon) map[string]string { return map[string]string{"eventId": eventID, "addonId": id} },
		Back:    "/console/events/" + eventID + "/addons", Show: c.showAddons})
}

// lifecycle reads the status a transition form asks for.
func lifecycle(r *req) (string, error) {
	s := form(r.rc, "status")
	switch s {
	case "draft", "open", "closed", "archived":
		return s, nil
	}
	return "", event.FieldError("status", "must be draft, open, closed or archived")
}

// addonStatus moves an add-on through its lifecycle; a move the core
// refuses shows on the page.
func (c *Console) addonStatus(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	id := param(r.rc, "itemId")
	s, err := lifecycle(r)
	if err != nil {
		return c.refusedMove(r, err)
	}
	return submit(r, formSubmit[event.UpdateAddon, event.Addon]{EventID: eventID, UnitID: unitID, View: &view{},
		Cmd: event.UpdateAddon{ID: id, Status: event.Some(s)}, Op: "updateAddon",
		Targets: func(event.Addon) map[string]string { return map[string]string{"eventId": eventID, "addonId": id} },
		Back:    "/console/events/" + eventID + "/addons", Show: c.showAddons, Fields: moveRefused, Refused: 409})
}

// refusedMove shows a refused lifecycle move at the top of the page.
func (c *Console) refusedMove(r *req, err error) error {
	v := &view{}
	if !moveRefused(err, v) {
		return err
	}
	return c.showAddons(r, v, 409)
}

// moveRefused puts a refused lifecycle move at the top of the page, not
// next to a field: the form is a button.
func moveRefused(err error, v *view) bool {
	if isNotFound(err) || !fieldErrors(err, v) {
		return false
	}
	for _, msg := range v.Errors {
		v.Error = "Not changed: " + msg
	}
	v.Errors = nil
	return true
}

// createBundle creates a bundle (as draft) of the quantities typed.
func (c *Console) createBundle(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	f, body := itemForm(r, "new-bundle")
	if body["items"], err = c.bundleItems(r, eventID, f); err != nil {
		return err
	}
	return submit(r, formSubmit[event.CreateBundle, event.Bundle]{EventID: eventID, UnitID: unitID, View: &view{Form: f},
		Body: body, Op: "createBundle", Targets: func(b event.Bundle) map[string]string {
			return map[string]string{"eventId": eventID, "bundleId": b.ID}
		}, Back: "/console/events/" + eventID + "/addons", Show: c.showAddons})
}

// updateBundle changes a bundle's name, price, capacity and contents.
func (c *Console) updateBundle(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	id := param(r.rc, "itemId")
	f, body := itemForm(r, id)
	if body["items"], err = c.bundleItems(r, eventID, f); err != nil {
		return err
	}
	return submit(r, formSubmit[event.UpdateBundle, event.Bundle]{EventID: eventID, UnitID: unitID, View: &view{Form: f},
		Body: body, Prepare: func(cmd *event.UpdateBundle) { cmd.ID = id }, Op: "updateBundle",
		Targets: func(event.Bundle) map[string]string { return map[string]string{"eventId": eventID, "bundleId": id} },
		Back:    "/console/events/" + eventID + "/addons", Show: c.showAddons})
}

// bundleStatus moves a bundle through its lifecycle.
func (c *Console) bundleStatus(r *req) error {
	eventID, unitID, err := r.eventUnit(permWrite)
	if err != nil {
		return err
	}
	id := param(r.rc, "itemId")
	s, err := lifecycle(r)
	if err != nil {
		return c.refusedMove(r, err)
	}
	return submit(r, formSubmit[event.UpdateBundle, event.Bundle]{EventID: eventID, UnitID: unitID, View: &view{},
		Cmd: event.UpdateBundle{ID: id, Status: event.Some(s)}, Op: "updateBundle",
		Targets: func(event.Bundle) map[string]string { return map[string]string{"eventId": eventID, "bundleId": id} },
		Back:    "/console/events/" + eventID + "/addons", Show: c.showAddons, Fields: moveRefused, Refused: 409})
}
