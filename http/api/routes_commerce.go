package api

import (
	"ticketd/event"
	thttp "ticketd/http"
)

// commerceRoutes is the selling half of the Developer API: redemption
// codes, add-ons, bundles, orders and checkout sessions.
func (a *api) commerceRoutes() []thttp.Route {
	dev := func(r thttp.Route) thttp.Route { r.Surface = thttp.Developer; return r }
	ref := func(c *thttp.Ctx) string { return c.Param("orderNumber") }
	return []thttp.Route{
		// Redemption codes.
		dev(thttp.Route{Method: "GET", Path: "/v1/events/{eventId}/redemption-codes", OperationID: "listRedemptionCodes", Tag: "Redemption codes",
			Summary: "List redemption codes with live uses", Query: event.ListCodes{}, Success: 200,
			Response: event.List[event.RedemptionCode]{}, Errors: []int{400, 404}, Handle: eventCmd[event.ListCodes](a, nil)}),
		dev(thttp.Route{Method: "POST", Path: "/v1/events/{eventId}/redemption-codes", OperationID: "mintRedemptionCodes", Tag: "Redemption codes",
			Summary: "Mint redemption codes: one, a batch (count), or one custom code (409 when it exists in the event)",
			Body:    event.MintCodes{}, Success: 201, Response: event.MintResult{}, Errors: []int{400, 404, 409},
			Handle: eventCmd[event.MintCodes](a, nil)}),
		dev(thttp.Route{Method: "GET", Path: "/v1/events/{eventId}/redemption-codes/lookup", OperationID: "lookupRedemptionCode", Tag: "Redemption codes",
			Summary: "Validate a buyer's code: the ticket it unlocks (hidden ones included), perks, discounted price; every invalid code answers the same 404",
			Query:   event.LookupCode{}, Success: 200, Response: event.CodeLookup{}, Errors: []int{400, 404},
			Handle: eventCmd[event.LookupCode](a, nil)}),
		dev(thttp.Route{Method: "POST", Path: "/v1/events/{eventId}/redemption-codes/{codeId}/disable", OperationID: "disableRedemptionCode", Tag: "Redemption codes",
			Summary: "Disable a redemption code (codes are never deleted)", Success: 200, Response: event.RedemptionCode{},
			Errors: errsRead, Handle: eventCmd(a, func(c *thttp.Ctx, cmd *event.DisableCode) { cmd.ID = c.Param("codeId") })}),

		// Add-ons.
		dev(thttp.Route{Method: "GET", Path: "/v1/events/{eventId}/addons", OperationID: "listAddons", Tag: "Add-ons",
			Summary: "List add-ons", Query: event.ListAddons{}, Success: 200, Response: event.List[event.Addon]{},
			Errors: []int{400, 404}, Handle: eventCmd[event.ListAddons](a, nil)}),
		dev(thttp.Route{Method: "POST", Path: "/v1/events/{eventId}/addons", OperationID: "createAddon", Tag: "Add-ons",
			Summary: "Create an add-on (as draft)", Body: event.CreateAddon{}, Success: 201, Response: event.Addon{},
			Errors: errsAll, Handle: eventCmd[event.CreateAddon](a, nil)}),
		dev(thttp.Route{Method: "GET", Path: "/v1/events/{eventId}/addons/{addonId}", OperationID: "getAddon", Tag: "Add-ons",
			Summary: "Get an add-on", Success: 200, Response: event.Addon{}, Errors: errsRead,
			Handle: eventCmd(a, func(c *thttp.Ctx, cmd *event.GetAddon) { cmd.ID = c.Param("addonId") })}),
		dev(thttp.Route{Method: "PATCH", Path: "/v1/events/{eventId}/addons/{addonId}", OperationID: "updateAddon", Tag: "Add-ons",
			Summary: "Update an add-on; status moves draft -> open <-> closed -> archived", Body: event.UpdateAddon{},
			Success: 200, Response: event.Addon{}, Errors: errsAll,
			Handle: eventCmd(a, func(c *thttp.Ctx, cmd *event.UpdateAddon) { cmd.ID = c.Param("addonId") })}),

		// Bundles.
		dev(thttp.Route{Method: "GET", Path: "/v1/events/{eventId}/bundles", OperationID: "listBundles", Tag: "Bundles",
			Summary: "List bundles", Query: event.ListBundles{}, Success: 200, Response: event.List[event.Bundle]{},
			Errors: []int{400, 404}, Handle: eventCmd[event.ListBundles](a, nil)}),
		dev(thttp.Route{Method: "POST", Path: "/v1/events/{eventId}/bundles", OperationID: "createBundle", Tag: "Bundles",
			Summary: "Create a bundle (as draft); every item must be a ticket type or add-on of the event",
			Body:    event.CreateBundle{}, Success: 201, Response: event.Bundle{}, Errors: errsAll,
			Handle: eventCmd[event.CreateBundle](a, nil)}),
		dev(thttp.Route{Method: "GET", Path: "/v1/events/{eventId}/bundles/{bundleId}", OperationID: "getBundle", Tag: "Bundles",
			Summary: "Get a bundle", Success: 200, Response: event.Bundle{}, Errors: errsRead,
			Handle: eventCmd(a, func(c *thttp.Ctx, cmd *event.GetBundle) { cmd.ID = c.Param("bundleId") })}),
		dev(thttp.Route{Method: "PATCH", Path: "/v1/events/{eventId}/bundles/{bundleId}", OperationID: "updateBundle", Tag: "Bundles",
			Summary: "Update a bundle", Body: event.UpdateBundle{}, Success: 200, Response: event.Bundle{}, Errors: errsAll,
			Handle: eventCmd(a, func(c *thttp.Ctx, cmd *event.UpdateBundle) { cmd.ID = c.Param("bundleId") })}),
		dev(thttp.Route{Method: "PUT", Path: "/v1/events/{eventId}/bundles/{bundleId}/items", OperationID: "replaceBundleItems", Tag: "Bundles",
			Summary: "Replace a bundle's whole contents", Body: []event.BundleItem{}, Success: 200, Response: event.Bundle{},
			Errors: errsAll, Handle: a.replaceBundleItems}),

		// Orders.
		dev(thttp.Route{Method: "GET", Path: "/v1/events/{eventId}/orders", OperationID: "listOrders", Tag: "Orders",
			Summary: "List orders with line items, newest first", Query: event.ListOrders{}, Success: 200,
			Response: event.List[event.Order]{}, Errors: []int{400, 404}, Headers: feedCursorDoc,
			Handle: listWithFeedCursor[event.ListOrders, event.Order](a)}),
		dev(thttp.Route{Method: "POST", Path: "/v1/events/{eventId}/orders", OperationID: "placeOrder", Tag: "Orders",
			Summary: "Place an order: holds its places for the order hold (15 minutes unless the service sets another); an already-registered buyer gets alreadyRegistered true and no second seat",
			Body:    event.PlaceOrder{}, Success: 201, Response: event.Order{}, Errors: errsAll,
			Handle: eventCmd[event.PlaceOrder](a, nil)}),
		dev(thttp.Route{Method: "GET", Path: "/v1/events/{eventId}/orders/{orderNumber}", OperationID: "getOrder", Tag: "Orders",
			Summary: "Get an order by its id or its orderNumber", Success: 200, Response: event.Order{}, Errors: errsRead,
			Handle: eventCmd(a, func(c *thttp.Ctx, cmd *event.GetOrder) { cmd.Ref = ref(c) })}),
		dev(thttp.Route{Method: "POST", Path: "/v1/events/{eventId}/orders/{orderNumber}/confirm", OperationID: "confirmOrder", Tag: "Orders",
			Summary: "Confirm an order: a free order is paid at once; a paid order awaits payment and answers paymentUrl (successUrl and cancelUrl required: absolute https, http for localhost)",
			Body:    event.ConfirmOrder{}, Success: 200, Response: event.Order{}, Errors: errsAll,
			Handle: eventCmd(a, func(c *thttp.Ctx, cmd *event.ConfirmOrder) { cmd.Ref = ref(c) })}),
		dev(thttp.Route{Method: "POST", Path: "/v1/events/{eventId}/orders/{orderNumber}/cancel", OperationID: "cancelOrder", Tag: "Orders",
			Summary: "Cancel an open order: its hold is released now; idempotent", Success: 200, Response: event.Order{},
			Errors: errsAction, Handle: a.cancelOrder}),

		// Checkout sessions.
		dev(thttp.Route{Method: "POST", Path: "/v1/events/{eventId}/checkout-sessions", OperationID: "createCheckoutSession", Tag: "Checkout sessions",
			Summary: "Create a hosted checkout session (24 hours, holds no seat); the event must be published (412)",
			Body:    event.CreateCheckoutSession{}, Success: 201, Response: event.CheckoutSession{}, Errors: errsAll,
			Handle: eventCmd[event.CreateCheckoutSession](a, nil)}),
	}
}

func (a *api) replaceBundleItems(c *thttp.Ctx) (any, error) {
	id, err := a.eventOf(c)
	if err != nil {
		return nil, err
	}
	var items []event.BundleItem
	if err := c.Bind(&items); err != nil {
		return nil, err
	}
	return a.askC(c, id, event.ReplaceBundleItems{ID: c.Param("bundleId"), Items: items})
}

// cancelOrder cancels an order through the layer's one cancel, which
// closes a hosted payment page of the order (the storefront's, the
// console's and the hosted pages' cancels are the same call).
func (a *api) cancelOrder(c *thttp.Ctx) (any, error) {
	id, err := a.eventOf(c)
	if err != nil {
		return nil, err
	}
	o, err := a.ops.CancelOrder(keyed(c, nil), id, event.CancelOrder{Ref: c.Param("orderNumber")})
	if err != nil {
		return nil, keyedErr(c, err)
	}
	return o, nil
}
