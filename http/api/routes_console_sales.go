package api

import (
	"ticketd/event"
	thttp "ticketd/http"
)

// The console for sales: admin routes under
// /admin/v1/events/{eventId}/...: registration forms per ticket type,
// promotion codes, the site (siteUrl, description) and translations. The
// storefront's ?lang= reads are in routes_storefront.go.

// consoleSalesRoutes is the console side of forms, promotion codes, the
// site and translations.
func (a *api) consoleSalesRoutes() []thttp.Route {
	adm := func(r thttp.Route) thttp.Route { r.Surface = thttp.Admin; return r }
	// Writes on an archived event are 412, like the other console records.
	errsConsoleWrite := []int{400, 404, 412}
	typeID := func(c *thttp.Ctx) string { return c.Param("typeId") }
	id := func(c *thttp.Ctx) string { return c.Param("promotionCodeId") }
	lang := func(c *thttp.Ctx) string { return c.Param("lang") }
	form := "/admin/v1/events/{eventId}/ticket-types/{typeId}/form"
	promos := "/admin/v1/events/{eventId}/promotion-codes"
	tr := "/admin/v1/events/{eventId}/translations"
	return []thttp.Route{
		adm(thttp.Route{Method: "PUT", Path: form, OperationID: "putRegistrationForm", Tag: "Registration forms",
			Summary: "Replace the draft of a ticket type's registration form (typed questions)", Body: event.PutForm{},
			Success: 200, Response: event.RegistrationForm{}, Errors: errsConsoleWrite,
			Handle: adminEventCmd(a, func(c *thttp.Ctx, cmd *event.PutForm) { cmd.TypeID = typeID(c) })}),
		adm(thttp.Route{Method: "GET", Path: form, OperationID: "getRegistrationForm", Tag: "Registration forms",
			Summary: "Get a ticket type's registration form: the draft and the published questions", Success: 200,
			Response: event.RegistrationForm{}, Errors: errsRead,
			Handle: adminEventCmd(a, func(c *thttp.Ctx, cmd *event.GetForm) { cmd.TypeID = typeID(c) })}),
		adm(thttp.Route{Method: "POST", Path: form + "/publish", OperationID: "publishRegistrationForm", Tag: "Registration forms",
			Summary: "Publish the draft: the storefront shows it and responses are checked against it", Success: 200,
			Response: event.RegistrationForm{}, Errors: errsConsoleWrite,
			Handle: adminEventCmd(a, func(c *thttp.Ctx, cmd *event.PublishForm) { cmd.TypeID = typeID(c) })}),

		adm(thttp.Route{Method: "POST", Path: promos, OperationID: "createPromotionCode", Tag: "Promotion codes",
			Summary: "Create a promotion code: percentOff (rounded half up per line) or amountOff (per unit, never below 0)",
			Body:    event.CreatePromotionCode{}, Success: 201, Response: event.PromotionCode{}, Errors: []int{400, 404, 409, 412},
			Handle: adminEventCmd[event.CreatePromotionCode](a, nil)}),
		adm(thttp.Route{Method: "GET", Path: promos, OperationID: "listPromotionCodes", Tag: "Promotion codes",
			Summary: "List the event's promotion codes", Query: event.ListPromotionCodes{}, Success: 200,
			Response: event.List[event.PromotionCode]{}, Errors: []int{400, 404},
			Handle: adminEventCmd[event.ListPromotionCodes](a, nil)}),
		adm(thttp.Route{Method: "GET", Path: promos + "/{promotionCodeId}", OperationID: "getPromotionCode", Tag: "Promotion codes",
			Summary: "Get a promotion code", Success: 200, Response: event.PromotionCode{}, Errors: errsRead,
			Handle: adminEventCmd(a, func(c *thttp.Ctx, cmd *event.GetPromotionCode) { cmd.ID = id(c) })}),
		adm(thttp.Route{Method: "PATCH", Path: promos + "/{promotionCodeId}", OperationID: "updatePromotionCode", Tag: "Promotion codes",
			Summary: "Update maxUses, expiresAt, appliesTo or active; absent fields stay, null clears", Body: event.UpdatePromotionCode{},
			Success: 200, Response: event.PromotionCode{}, Errors: errsConsoleWrite,
			Handle: adminEventCmd(a, func(c *thttp.Ctx, cmd *event.UpdatePromotionCode) { cmd.ID = id(c) })}),
		adm(thttp.Route{Method: "DELETE", Path: promos + "/{promotionCodeId}", OperationID: "deletePromotionCode", Tag: "Promotion codes",
			Summary: "Disable a promotion code (orders keep referring to it); answers the record", Success: 200,
			Response: event.PromotionCode{}, Errors: []int{404, 412},
			Handle: adminEventCmd(a, func(c *thttp.Ctx, cmd *event.DeletePromotionCode) { cmd.ID = id(c) })}),

		adm(thttp.Route{Method: "PATCH", Path: "/admin/v1/events/{eventId}/site", OperationID: "setEventSite", Tag: "Site",
			Summary: "Set the event's siteUrl (absolute https, http only for localhost) and/or description; null clears",
			Body:    event.SetSite{}, Success: 200, Response: event.Event{}, Errors: errsConsoleWrite,
			Handle: adminEventCmd[event.SetSite](a, nil)}),

		adm(thttp.Route{Method: "GET", Path: tr, OperationID: "listTranslations", Tag: "Translations",
			Summary: "List the event's languages", Success: 200, Response: event.List[event.Translation]{}, Errors: []int{404},
			Handle: adminEventCmd[event.ListTranslations](a, nil)}),
		adm(thttp.Route{Method: "PUT", Path: tr + "/{lang}", OperationID: "putTranslation", Tag: "Translations",
			Summary: "Replace one language (a BCP 47 tag such as de or zh-CN): names and descriptions of the event, ticket types, add-ons, bundles, sessions",
			Body:    event.PutTranslation{}, Success: 200, Response: event.Translation{}, Errors: errsConsoleWrite,
			Handle: adminEventCmd(a, func(c *thttp.Ctx, cmd *event.PutTranslation) { cmd.Lang = lang(c) })}),
		adm(thttp.Route{Method: "GET", Path: tr + "/{lang}", OperationID: "getTranslation", Tag: "Translations",
			Summary: "Get one language", Success: 200, Response: event.Translation{}, Errors: errsRead,
			Handle: adminEventCmd(a, func(c *thttp.Ctx, cmd *event.GetTranslation) { cmd.Lang = lang(c) })}),
		adm(thttp.Route{Method: "DELETE", Path: tr + "/{lang}", OperationID: "deleteTranslation", Tag: "Translations",
			Summary: "Remove one language; answers it", Success: 200, Response: event.Translation{}, Errors: []int{404, 412},
			Handle: adminEventCmd(a, func(c *thttp.Ctx, cmd *event.DeleteTranslation) { cmd.Lang = lang(c) })}),
	}
}
