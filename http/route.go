package http

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"ticketd/event"
)

// This file is the contract shared by the server (server.go and friends), the
// OpenAPI generator (openapi*.go) and the endpoint files (routes_*.go): every
// endpoint is one Route value, and both the router and the OpenAPI documents
// are built from the same table, so they cannot drift.

// Surface is the part of the service a route belongs to; it decides the
// authentication and which OpenAPI document describes the route.
type Surface int

const (
	// Developer is /v1, secret keys.
	Developer Surface = iota
	// Storefront is /storefront/v1, publishable keys, CORS by key origins.
	Storefront
	// Admin is /admin/v1, the console, admin token.
	Admin
	// Public needs no key: OpenAPI documents, docs pages, hosted pages,
	// the payment webhook, metrics.
	Public
	// Door is /door/v1, device keys (dk_...) of one event (decisions §18).
	Door
)

// Route describes one endpoint. Body, Query and Response are zero values of
// Go types (e.g. event.CreateRegistration{}); the binder decodes and
// validates requests by them and the OpenAPI generator documents them.
//
// Struct tag conventions read by both the binder and the generator:
//
//	json:"name"              wire name (json:"-" = not from the body, e.g. path ids)
//	v:"required"             must be present (and not null)
//	v:"min=1,max=100"        integer / number bounds
//	v:"minLen=1,maxLen=64"   string length bounds (in characters)
//	v:"maxItems=50"          array length bound
//	v:"enum=en|zh-CN"        allowed string values
//	v:"format=email"         email | date-time | uri | date | timezone
//	v:"pattern=nospace"      a named pattern of bind.Patterns (the document says its ECMA-262 form)
//	v:"nullable"             null is a meaningful value (e.g. capacity: null = unlimited)
//	query:"name"             on Query structs: the query parameter name
//	doc:"text"               description in the OpenAPI document
type Route struct {
	Surface     Surface
	Method      string // GET, POST, PATCH, PUT, DELETE
	Path        string // fasthttp/router pattern, e.g. /v1/events/{eventId}
	OperationID string // unique, lowerCamel, e.g. createRegistration
	Summary     string
	Tag         string // OpenAPI tag grouping, e.g. "Registrations"
	Body        any    // request body type or nil; a slice type for array bodies
	Query       any    // query parameter struct or nil
	Success     int    // success status (200, 201, 204)
	AltSuccess  []int  // other success statuses (e.g. 200 for a repeat registration)
	Response    any    // success body type; nil for no body
	Errors      []int  // error statuses this route documents (401/429 etc. are added by surface)
	IPLimited   bool   // Storefront: also limited per (key, client IP) (StorefrontIPLimitPerMinute)
	// NoKey: the route needs no key although its surface does (the door's
	// device initialize, which takes a one-time setup code instead).
	NoKey bool
	// ContentType is the success body's media type when it is not JSON
	// (the door's Server-Sent Events stream); the handler writes it.
	ContentType string
	// Headers are response headers of a success this route sets besides
	// every route's, by name, with their descriptions (the documents).
	Headers map[string]string
	// QueueToken: the route reads the Queue-Token header of a waiting
	// room (decisions §19); RetryAfter: its success answers Retry-After.
	QueueToken bool
	RetryAfter bool
	// Hot: matched ahead of the router, its path parameters copied once
	// (hotroute.go): a drop's orders, joins and polls. Nothing else
	// changes; a route that shares paths with another stays with the
	// router.
	Hot    bool
	Handle HandlerFunc
}

// HandlerFunc handles one request after authentication and decoding. It
// returns the success body (encoded as JSON with Route.Success unless
// c.SetStatus chose an AltSuccess) or an error: *event.Error values map to
// their status through the one map in errors.go; anything else is a 500.
type HandlerFunc func(c *Ctx) (any, error)

// MaxPathParamLen bounds every path parameter (an id, an order number, a
// language tag), in characters after unescaping; the OpenAPI documents say
// it as maxLength and a longer one answers 400.
const MaxPathParamLen = 100

// pathParamNames returns the parameter names of a router pattern, in order.
func pathParamNames(p string) []string {
	var names []string
	for {
		i := strings.IndexByte(p, '{')
		if i < 0 {
			return names
		}
		j := strings.IndexByte(p[i:], '}')
		if j < 0 {
			return names
		}
		name, _, _ := strings.Cut(p[i+1:i+j], ":")
		names = append(names, name)
		p = p[i+j:]
	}
}

// checkPathParams refuses a path parameter longer than MaxPathParamLen.
func checkPathParams(c *Ctx, names []string) error {
	for _, n := range names {
		if v := c.Param(n); utf8.RuneCountInString(v) > MaxPathParamLen {
			reason := "at most " + strconv.Itoa(MaxPathParamLen) + " characters"
			return NewError(400, n+": "+reason, event.Detail{Field: n, Reason: reason})
		}
	}
	return nil
}
