package eventsetup

import (
	"ticketd/event"
	"ticketd/http/console/shell"
)

func init() {
	pageNames = append(pageNames, "addons")
	funcs["dict2"] = func(p *shell.View, row itemRow, k string) itemArgs { return itemArgs{P: p, Row: row, K: k} }
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
	P   *shell.View
	Row itemRow
	K   string
}

// catalogueRoutes are the pages of what an event sells besides tickets
// and how it is described: add-ons and bundles, the program and perks,
// registration forms, translations.
func (c *pages) catalogueRoutes() []shell.Route {
	rs := []shell.Route{
		{Method: "GET", Path: "/console/events/{eventId}/addons", H: c.addonsPage},
		{Method: "POST", Path: "/console/events/{eventId}/addons", H: c.createAddon},
		{Method: "POST", Path: "/console/events/{eventId}/addons/{itemId}", H: c.updateAddon},
		{Method: "POST", Path: "/console/events/{eventId}/addons/{itemId}/status", H: c.addonStatus},
		{Method: "POST", Path: "/console/events/{eventId}/bundles", H: c.createBundle},
		{Method: "POST", Path: "/console/events/{eventId}/bundles/{itemId}", H: c.updateBundle},
		{Method: "POST", Path: "/console/events/{eventId}/bundles/{itemId}/status", H: c.bundleStatus},
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
	return shell.Itoa(*capacity)
}

// addonsPage lists the event's add-ons and bundles with the API's
// cursors, each with its state, availability, edit form and lifecycle
// moves.
func (c *pages) addonsPage(r *shell.Req) error {
	return c.showAddons(r, &shell.View{}, 200)
}

// showAddons renders the page; v.Form["edit"] names the refused form
// ("new-addon", "new-bundle" or an item id) that gets v.Form and
// v.Errors back.
func (c *pages) showAddons(r *shell.Req, v *shell.View, status int) error {
	v.Title = "Add-ons and bundles"
	eventID, _, err := c.EventHead(r, v, shell.PermRead)
	if err != nil {
		return err
	}
	q := r.RC.QueryArgs()
	addons, err := shell.AskOp(c.Console, eventID, event.ListAddons{Limit: shell.ListLimit, Cursor: string(q.Peek("addons"))})
	if err != nil {
		return err
	}
	bundles, err := shell.AskOp(c.Console, eventID, event.ListBundles{Limit: shell.ListLimit, Cursor: string(q.Peek("bundles"))})
	if err != nil {
		return err
	}
	types, err := shell.AskOp(c.Console, eventID, event.ListTicketTypes{Limit: 100})
	if err != nil {
		return err
	}
	v.Typed()
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
			own["q_"+it.ItemID] = shell.Itoa(it.Quantity)
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
	c.Render(r.RC, status, "addons", v)
	return nil
}

// itemForm reads the name, price and capacity fields as the API's JSON:
// an empty capacity is unlimited (null).
func itemForm(r *shell.Req, edit string) (map[string]string, map[string]any) {
	f := map[string]string{"edit": edit}
	for _, k := range []string{"name", "priceAmount", "capacity"} {
		f[k] = shell.Form(r.RC, k)
	}
	body := map[string]any{"name": f["name"], "capacity": nil}
	if f["priceAmount"] == "" {
		body["priceAmount"] = 0
	} else {
		body["priceAmount"] = shell.MoneyField(f["priceAmount"])
	}
	if f["capacity"] != "" {
		body["capacity"] = shell.JSONNumberOr(f["capacity"])
	}
	return f, body
}

// bundleItems reads the quantity fields ("q_" and the item's id) of the
// event's ticket types and add-ons; 0 or empty leaves the item out.
func (c *pages) bundleItems(r *shell.Req, eventID string, f map[string]string) ([]map[string]any, error) {
	types, err := shell.AskOp(c.Console, eventID, event.ListTicketTypes{Limit: 100})
	if err != nil {
		return nil, err
	}
	addons, err := shell.AskOp(c.Console, eventID, event.ListAddons{Limit: 100})
	if err != nil {
		return nil, err
	}
	items := []map[string]any{}
	add := func(kind, id string) {
		k := "q_" + id
		f[k] = shell.Form(r.RC, k)
		if f[k] != "" && f[k] != "0" {
			items = append(items, map[string]any{"itemType": kind, "itemId": id, "quantity": shell.JSONNumberOr(f[k])})
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
func (c *pages) createAddon(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	f, body := itemForm(r, "new-addon")
	return shell.Submit(r, shell.FormSubmit[event.CreateAddon, event.Addon]{EventID: eventID, UnitID: unitID, View: &shell.View{Form: f},
		Body: body, Op: "createAddon", Targets: func(a event.Addon) map[string]string {
			return map[string]string{"eventId": eventID, "addonId": a.ID}
		}, Back: "/console/events/" + eventID + "/addons", Show: c.showAddons})
}

// updateAddon changes an add-on's name, price and capacity.
func (c *pages) updateAddon(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	id := shell.Param(r.RC, "itemId")
	f, body := itemForm(r, id)
	return shell.Submit(r, shell.FormSubmit[event.UpdateAddon, event.Addon]{EventID: eventID, UnitID: unitID, View: &shell.View{Form: f},
		Body: body, Prepare: func(cmd *event.UpdateAddon) { cmd.ID = id }, Op: "updateAddon",
		Targets: func(event.Addon) map[string]string { return map[string]string{"eventId": eventID, "addonId": id} },
		Back:    "/console/events/" + eventID + "/addons", Show: c.showAddons})
}

// lifecycle reads the status a transition form asks for.
func lifecycle(r *shell.Req) (string, error) {
	s := shell.Form(r.RC, "status")
	switch s {
	case "draft", "open", "closed", "archived":
		return s, nil
	}
	return "", event.FieldError("status", "must be draft, open, closed or archived")
}

// addonStatus moves an add-on through its lifecycle; a move the core
// refuses shows on the page.
func (c *pages) addonStatus(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	id := shell.Param(r.RC, "itemId")
	s, err := lifecycle(r)
	if err != nil {
		return c.refusedMove(r, err)
	}
	return shell.Submit(r, shell.FormSubmit[event.UpdateAddon, event.Addon]{EventID: eventID, UnitID: unitID, View: &shell.View{},
		Cmd: event.UpdateAddon{ID: id, Status: event.Some(s)}, Op: "updateAddon",
		Targets: func(event.Addon) map[string]string { return map[string]string{"eventId": eventID, "addonId": id} },
		Back:    "/console/events/" + eventID + "/addons", Show: c.showAddons, Fields: moveRefused, Refused: 409})
}

// refusedMove shows a refused lifecycle move at the top of the page.
func (c *pages) refusedMove(r *shell.Req, err error) error {
	v := &shell.View{}
	if !moveRefused(err, v) {
		return err
	}
	return c.showAddons(r, v, 409)
}

// moveRefused puts a refused lifecycle move at the top of the page, not
// next to a field: the form is a button.
func moveRefused(err error, v *shell.View) bool {
	if shell.IsNotFound(err) || !shell.FieldErrors(err, v) {
		return false
	}
	for _, msg := range v.Errors {
		v.Error = "Not changed: " + msg
	}
	v.Errors = nil
	return true
}

// createBundle creates a bundle (as draft) of the quantities typed.
func (c *pages) createBundle(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	f, body := itemForm(r, "new-bundle")
	if body["items"], err = c.bundleItems(r, eventID, f); err != nil {
		return err
	}
	return shell.Submit(r, shell.FormSubmit[event.CreateBundle, event.Bundle]{EventID: eventID, UnitID: unitID, View: &shell.View{Form: f},
		Body: body, Op: "createBundle", Targets: func(b event.Bundle) map[string]string {
			return map[string]string{"eventId": eventID, "bundleId": b.ID}
		}, Back: "/console/events/" + eventID + "/addons", Show: c.showAddons})
}

// updateBundle changes a bundle's name, price, capacity and contents.
func (c *pages) updateBundle(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	id := shell.Param(r.RC, "itemId")
	f, body := itemForm(r, id)
	if body["items"], err = c.bundleItems(r, eventID, f); err != nil {
		return err
	}
	return shell.Submit(r, shell.FormSubmit[event.UpdateBundle, event.Bundle]{EventID: eventID, UnitID: unitID, View: &shell.View{Form: f},
		Body: body, Prepare: func(cmd *event.UpdateBundle) { cmd.ID = id }, Op: "updateBundle",
		Targets: func(event.Bundle) map[string]string { return map[string]string{"eventId": eventID, "bundleId": id} },
		Back:    "/console/events/" + eventID + "/addons", Show: c.showAddons})
}

// bundleStatus moves a bundle through its lifecycle.
func (c *pages) bundleStatus(r *shell.Req) error {
	eventID, unitID, err := r.EventUnit(shell.PermWrite)
	if err != nil {
		return err
	}
	id := shell.Param(r.RC, "itemId")
	s, err := lifecycle(r)
	if err != nil {
		return c.refusedMove(r, err)
	}
	return shell.Submit(r, shell.FormSubmit[event.UpdateBundle, event.Bundle]{EventID: eventID, UnitID: unitID, View: &shell.View{},
		Cmd: event.UpdateBundle{ID: id, Status: event.Some(s)}, Op: "updateBundle",
		Targets: func(event.Bundle) map[string]string { return map[string]string{"eventId": eventID, "bundleId": id} },
		Back:    "/console/events/" + eventID + "/addons", Show: c.showAddons, Fields: moveRefused, Refused: 409})
}
