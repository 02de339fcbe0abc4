package api

import (
	"sync"

	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/http/bind"
	"ticketd/http/pages"
)

// StorefrontEvent is a published event as the storefront lists it.
type StorefrontEvent struct {
	event.Event
	// SiteURL is the event's public page address set in the console; null
	// until set.
	SiteURL *string `json:"siteUrl"`
}

// StorefrontEventsQuery pages the storefront's events; Lang picks a
// translation of names and descriptions (unknown: the default texts).
type StorefrontEventsQuery struct {
	bind.ListQuery
	Lang string `query:"lang" v:"maxLen=35"`
}

// storefrontRoutes is the Storefront API (/storefront/v1, publishable
// keys): the published catalog, code lookup, checkout sessions and the
// direct place / confirm / poll order flow. Every command is wrapped in
// event.Storefront, so an unpublished event answers 404 like a missing one.
func (a *api) storefrontRoutes() []thttp.Route {
	sf := func(r thttp.Route) thttp.Route { r.Surface = thttp.Storefront; return r }
	ref := func(c *thttp.Ctx) string { return c.Param("orderNumber") }
	return []thttp.Route{
		sf(thttp.Route{Method: "GET", Path: "/storefront/v1/events", OperationID: "listPublishedEvents", Tag: "Catalog",
			Summary: "List published events, each with siteUrl; ?lang= translates names and descriptions, falling back per field", Query: StorefrontEventsQuery{}, Success: 200,
			Response: bind.List[StorefrontEvent]{}, Errors: []int{400}, Handle: a.listPublishedEvents}),
		sf(thttp.Route{Method: "GET", Path: "/storefront/v1/events/{publicId}", OperationID: "getCatalog", Tag: "Catalog",
			Summary: "Everything a sales page needs: public ticket types (soldOut, never a count), upcoming ticket types, add-ons, bundles",
			Query:   event.GetCatalog{}, Success: 200, Response: event.Catalog{}, Errors: []int{400, 404}, Handle: storefrontCmd[event.GetCatalog](a, nil)}),
		sf(thttp.Route{Method: "GET", Path: "/storefront/v1/events/{publicId}/redemption-codes/lookup", OperationID: "lookupStorefrontRedemptionCode", Tag: "Catalog",
			Summary: "Look up a buyer's code: the only way to reach hidden ticket types; every invalid code answers the same 404",
			Query:   event.LookupStorefrontCode{}, Success: 200, Response: event.StorefrontCodeLookup{}, Errors: []int{400, 404},
			Handle: storefrontCmd[event.LookupStorefrontCode](a, nil)}),
		sf(thttp.Route{Method: "POST", Path: "/storefront/v1/events/{publicId}/checkout-sessions", OperationID: "createStorefrontCheckoutSession", Tag: "Checkout",
			Summary: "Create a hosted checkout session (24 hours, holds no seat); returnUrl must be https (http for localhost) at one of the key's origins", Body: event.CreateCheckoutSession{},
			Success: 201, Response: event.CheckoutSession{}, Errors: []int{400, 404, 412, 429}, IPLimited: true, QueueToken: true,
			Handle: storefrontCmd(a, func(c *thttp.Ctx, cmd *event.CreateCheckoutSession) {
				cmd.Storefront, cmd.Origins, cmd.Client, cmd.QueueToken = true, c.Principal().Origins, c.HoldClient(), queueToken(c)
			})}),
		sf(thttp.Route{Method: "POST", Path: "/storefront/v1/events/{publicId}/orders", OperationID: "placeStorefrontOrder", Hot: true, Tag: "Orders",
			Summary: "Place an order: holds its places for the order hold (15 minutes unless the service sets another)", Body: event.PlaceOrder{}, Success: 201,
			Response: event.Order{}, Errors: []int{400, 404, 409, 412, 429}, IPLimited: true, QueueToken: true,
			Handle: a.placeStorefrontOrder}),
		sf(thttp.Route{Method: "GET", Path: "/storefront/v1/events/{publicId}/orders/{orderNumber}", OperationID: "getStorefrontOrder", Tag: "Orders",
			Summary: "Poll an order by its orderNumber (the buyer's email is masked)", Success: 200, Response: event.Order{},
			Errors: []int{404}, IPLimited: true, Handle: a.getStorefrontOrder}),
		sf(thttp.Route{Method: "POST", Path: "/storefront/v1/events/{publicId}/orders/{orderNumber}/confirm", OperationID: "confirmStorefrontOrder", Tag: "Orders",
			Summary: "Confirm an order; successUrl and cancelUrl are optional (without them the payment page returns the buyer to the hosted order page) and must be https (http for localhost) at one of the key's origins",
			Body:    event.ConfirmOrder{}, Success: 200, Response: event.Order{}, Errors: []int{400, 404, 412},
			Handle: storefrontCmd(a, func(c *thttp.Ctx, cmd *event.ConfirmOrder) {
				cmd.Ref, cmd.Storefront, cmd.Origins = ref(c), true, c.Principal().Origins
			})}),
		sf(thttp.Route{Method: "POST", Path: "/storefront/v1/events/{publicId}/orders/{orderNumber}/cancel", OperationID: "cancelStorefrontOrder", Tag: "Orders",
			Summary: "Cancel an open order: its hold is released now; idempotent", Success: 200, Response: event.Order{},
			Errors: []int{404, 412}, Handle: a.cancelStorefrontOrder}),
	}
}

// storefrontEventOf returns the path's event id if the key's business unit
// owns it. Whether it is published is the machine's check (event.Storefront).
func (a *api) storefrontEventOf(c *thttp.Ctx) (string, error) {
	id := c.Param("publicId")
	unit, ok := a.ops.EventUnit(id)
	if !ok || unit != c.Principal().UnitID {
		return "", errEventNotFound
	}
	return id, nil
}

// storefrontCmd is eventCmd for the storefront: the command is wrapped in
// event.Storefront.
func storefrontCmd[C event.Command](a *api, set func(c *thttp.Ctx, cmd *C)) thttp.HandlerFunc {
	return func(c *thttp.Ctx) (any, error) {
		id, err := a.storefrontEventOf(c)
		if err != nil {
			return nil, err
		}
		cmd, err := bindCmd(c, set)
		if err != nil {
			return nil, err
		}
		return a.askC(c, id, event.Storefront{Cmd: cmd})
	}
}

// placeStorefrontOrder is storefrontCmd for an order, which asks the
// event's sale view before the command is boxed for the actor: a drop's
// sold-out refusals are most of its requests.
func (a *api) placeStorefrontOrder(c *thttp.Ctx) (any, error) {
	id, err := a.storefrontEventOf(c)
	if err != nil {
		return nil, err
	}
	// The command is bound into a pooled one (Bind takes it as an
	// interface, so a local escapes: an allocation per refusal); the ask
	// boxes a copy, and what the copy shares (items, strings) is the
	// binder's fresh allocations, never the pool's.
	cmd := orderPool.Get().(*event.PlaceOrder)
	defer func() { *cmd = event.PlaceOrder{}; orderPool.Put(cmd) }()
	if err := c.Bind(cmd); err != nil {
		return nil, err
	}
	cmd.Storefront, cmd.Client, cmd.QueueToken = true, c.HoldClient(), queueToken(c)
	ctx := keyed(c, nil)
	if err := a.ops.OrderFromView(ctx, id, cmd); err != nil {
		return nil, keyedErr(c, err)
	}
	res, err := a.ops.Ask(ctx, id, event.Storefront{Cmd: *cmd})
	return res, keyedErr(c, err)
}

var orderPool = sync.Pool{New: func() any { return new(event.PlaceOrder) }}

// cancelStorefrontOrder cancels an order under the storefront's rules
// through the layer's one cancel (see cancelOrder).
func (a *api) cancelStorefrontOrder(c *thttp.Ctx) (any, error) {
	id, err := a.storefrontEventOf(c)
	if err != nil {
		return nil, err
	}
	o, err := a.ops.CancelOrder(keyed(c, nil), id, event.Storefront{Cmd: event.CancelOrder{Ref: c.Param("orderNumber")}})
	if err != nil {
		return nil, keyedErr(c, err)
	}
	return o, nil
}

func (a *api) getStorefrontOrder(c *thttp.Ctx) (any, error) {
	res, err := storefrontCmd(a, func(c *thttp.Ctx, cmd *event.GetOrder) { cmd.Ref = c.Param("orderNumber") })(c)
	if err != nil {
		return nil, err
	}
	o, ok := res.(event.Order)
	if !ok {
		return res, nil
	}
	// Anyone holding the page's publishable key and an order number can
	// poll it: keep the buyer's personal data out of the answer.
	if o.OrderNumber != c.Param("orderNumber") {
		return nil, &event.Error{Code: event.NotFound, Message: "order not found"} // ids are not accepted here
	}
	o.Email = pages.MaskEmail(o.Email)
	o.Name = nil
	o.Responses = nil
	return o, nil
}

// listPublishedEvents pages through the unit's published events, newest
// first.
func (a *api) listPublishedEvents(c *thttp.Ctx) (any, error) {
	var q StorefrontEventsQuery
	if err := c.BindQuery(&q); err != nil {
		return nil, err
	}
	after, err := bind.DecodeCursor(q.Cursor)
	if err != nil {
		return nil, err
	}
	// Events known not to be published are left out by the index.
	ids, ok := a.ops.PublishedCandidates(c.Principal().UnitID, after)
	if !ok {
		return nil, thttp.NewError(400, "cursor: unknown cursor", event.Detail{Field: "cursor", Reason: "unknown cursor"})
	}
	i := len(ids) - 1
	out := make([]StorefrontEvent, 0, q.Limit)
	for ; i >= 0 && len(out) < q.Limit; i-- {
		ev, err := askOp(a, ids[i], event.GetLocalizedEvent{Lang: q.Lang})
		if err != nil {
			return nil, err
		}
		if ev.Status == "published" {
			ev.WaitingRoom = nil // the organizer's counts: the catalog has the buyers' view
			out = append(out, StorefrontEvent{Event: ev, SiteURL: ev.SiteURL})
		}
	}
	// More published events may follow i; the cursor is the last examined id.
	next := ""
	if i >= 0 {
		next = ids[i+1]
	}
	return bind.NewList(out, i >= 0, next), nil
}
