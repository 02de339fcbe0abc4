package api

import (
	"errors"
	"net/url"
	"strconv"
	"strings"

	"ticketd/directory"
	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/http/bind"
	"ticketd/ops"
)

// The console (admin API, /admin/v1): business units and API keys.

// CreateUnitRequest is the body of POST /admin/v1/business-units.
type CreateUnitRequest struct {
	Name string `json:"name" v:"required,minLen=1,maxLen=200"`
}

// BusinessUnit is a business unit record.
type BusinessUnit struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	CreatedAt event.Time `json:"createdAt"`
}

// CreateKeyRequest is the body of POST .../api-keys.
type CreateKeyRequest struct {
	Type      string      `json:"type" v:"required,enum=secret|publishable"`
	Name      string      `json:"name,omitempty" v:"maxLen=200"`
	Origins   []string    `json:"origins,omitempty" v:"maxItems=50" doc:"Browser origins of a publishable key's site (https, or http for localhost)."`
	ExpiresAt *event.Time `json:"expiresAt,omitempty" v:"nullable"`
	Version   string      `json:"version,omitempty" v:"enum=2026-03-15|2026-08-22" doc:"API version the key is pinned to (default: the current one)."`
}

// APIKey is an API key record. Key is the whole key in the create answer
// and for publishable keys; a secret key is masked everywhere else.
type APIKey struct {
	ID        string      `json:"id"`
	UnitID    string      `json:"unitId"`
	Type      string      `json:"type" v:"enum=secret|publishable"`
	Key       string      `json:"key"`
	Name      string      `json:"name"`
	Origins   []string    `json:"origins"`
	Version   string      `json:"version"`
	CreatedAt event.Time  `json:"createdAt"`
	ExpiresAt *event.Time `json:"expiresAt"`
	RevokedAt *event.Time `json:"revokedAt"`
}

func (a *api) adminRoutes() []thttp.Route {
	adm := func(r thttp.Route) thttp.Route { r.Surface = thttp.Admin; return r }
	return []thttp.Route{
		adm(thttp.Route{Method: "POST", Path: "/admin/v1/business-units", OperationID: "createBusinessUnit", Tag: "Business units",
			Summary: "Create a business unit", Body: CreateUnitRequest{}, Success: 201, Response: BusinessUnit{},
			Errors: []int{400}, Handle: a.createUnit}),
		adm(thttp.Route{Method: "GET", Path: "/admin/v1/business-units", OperationID: "listBusinessUnits", Tag: "Business units",
			Summary: "List business units", Query: bind.ListQuery{}, Success: 200, Response: bind.List[BusinessUnit]{},
			Errors: []int{400}, Handle: a.listUnits}),
		adm(thttp.Route{Method: "POST", Path: "/admin/v1/business-units/{unitId}/api-keys", OperationID: "createApiKey", Tag: "API keys",
			Summary: "Create an API key; the whole secret key is shown only in this answer", Body: CreateKeyRequest{},
			Success: 201, Response: APIKey{}, Errors: []int{400, 404}, Handle: a.createKey}),
		adm(thttp.Route{Method: "GET", Path: "/admin/v1/business-units/{unitId}/api-keys", OperationID: "listApiKeys", Tag: "API keys",
			Summary: "List a unit's API keys; secret keys masked, publishable keys whole", Query: bind.ListQuery{},
			Success: 200, Response: bind.List[APIKey]{}, Errors: []int{400, 404}, Handle: a.listKeys}),
		adm(thttp.Route{Method: "POST", Path: "/admin/v1/api-keys/{keyId}/revoke", OperationID: "revokeApiKey", Tag: "API keys",
			Summary: "Revoke an API key, effective at once", Success: 200, Response: APIKey{},
			Errors: []int{404}, Handle: a.revokeKey}),
	}
}

func (a *api) createUnit(c *thttp.Ctx) (any, error) {
	var req CreateUnitRequest
	if err := c.Bind(&req); err != nil {
		return nil, err
	}
	u, err := a.ops.CreateUnit(keyed(c, func(r any) any { u, _ := r.(directory.Unit); return unitView(u) }), req.Name)
	if err != nil {
		return nil, keyedErr(c, dirErr(err))
	}
	return unitView(u), nil
}

func unitView(u directory.Unit) BusinessUnit {
	return BusinessUnit{ID: u.ID, Name: u.Name, CreatedAt: event.At(u.CreatedAt)}
}

func (a *api) listUnits(c *thttp.Ctx) (any, error) {
	var q bind.ListQuery
	if err := c.BindQuery(&q); err != nil {
		return nil, err
	}
	units := a.ops.Directory().Units()
	views := make([]BusinessUnit, len(units))
	for i, u := range units {
		views[i] = unitView(u)
	}
	return paginate(views, q, func(u BusinessUnit) string { return u.ID })
}

func (a *api) createKey(c *thttp.Ctx) (any, error) {
	var req CreateKeyRequest
	if err := c.Bind(&req); err != nil {
		return nil, err
	}
	unitID := c.Param("unitId")
	if ok, err := a.unitKnown(unitID); err != nil {
		return nil, err
	} else if !ok {
		return nil, thttp.NewError(404, "business unit not found")
	}
	if req.Version == "" {
		req.Version = thttp.CurrentVersion
	} else if !thttp.ValidVersion(req.Version) {
		return nil, thttp.NewError(400, "version: unknown API version "+req.Version,
			event.Detail{Field: "version", Reason: "unknown API version; known: " + strings.Join(thttp.KnownVersions(), ", ")})
	}
	var details []event.Detail
	for i, o := range req.Origins {
		if reason := validOrigin(o); reason != "" {
			details = append(details, event.Detail{Field: "origins[" + strconv.Itoa(i) + "]", Reason: reason})
		}
	}
	if len(req.Origins) > 0 && req.Type != directory.Publishable {
		details = append(details, event.Detail{Field: "origins", Reason: "only publishable keys have origins"})
	}
	if len(details) > 0 {
		return nil, thttp.NewError(400, details[0].Field+": "+details[0].Reason, details...)
	}
	spec := ops.KeySpec{UnitID: unitID, Type: req.Type, Name: req.Name, Origins: req.Origins, Version: req.Version}
	if req.ExpiresAt != nil {
		t := req.ExpiresAt.Time.UTC()
		spec.ExpiresAt = &t
	}
	k, secret, err := a.ops.CreateKey(keyed(c, func(r any) any {
		ck, _ := r.(ops.CreatedKey)
		v := keyView(ck.Key)
		v.Key = ck.Secret
		return v
	}), spec)
	if err != nil {
		return nil, keyedErr(c, dirErr(err))
	}
	v := keyView(k)
	v.Key = secret
	return v, nil
}

// validOrigin validates a browser origin: scheme://host[:port] with no
// path; https, or http for localhost development.
func validOrigin(o string) string {
	u, err := url.Parse(o)
	if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "must be an origin such as https://shop.example.com"
	}
	if u.Scheme == "https" {
		return ""
	}
	host := u.Hostname()
	if u.Scheme == "http" && event.LoopbackHost(host) {
		return ""
	}
	return "must use https (http is allowed for localhost)"
}

func keyView(k directory.Key) APIKey {
	v := APIKey{
		ID: k.ID, UnitID: k.UnitID, Type: k.Type, Name: k.Name, Origins: k.Origins,
		Version: k.Version, CreatedAt: event.At(k.CreatedAt),
	}
	if v.Origins == nil {
		v.Origins = []string{}
	}
	if k.Type == directory.Publishable {
		v.Key = k.Token
	} else {
		v.Key = "sk_..." + k.Hint
	}
	if k.ExpiresAt != nil {
		t := event.At(*k.ExpiresAt)
		v.ExpiresAt = &t
	}
	if k.RevokedAt != nil {
		t := event.At(*k.RevokedAt)
		v.RevokedAt = &t
	}
	return v
}

func (a *api) listKeys(c *thttp.Ctx) (any, error) {
	var q bind.ListQuery
	if err := c.BindQuery(&q); err != nil {
		return nil, err
	}
	unitID := c.Param("unitId")
	dir := a.ops.Directory()
	if _, ok := dir.Unit(unitID); !ok {
		return nil, thttp.NewError(404, "business unit not found")
	}
	keys := dir.Keys(unitID)
	views := make([]APIKey, len(keys))
	for i, k := range keys {
		views[i] = keyView(k)
	}
	return paginate(views, q, func(k APIKey) string { return k.ID })
}

func (a *api) revokeKey(c *thttp.Ctx) (any, error) {
	k, err := a.ops.RevokeKey(keyed(c, func(r any) any { k, _ := r.(directory.Key); return keyView(k) }), c.Param("keyId"))
	if err != nil {
		return nil, keyedErr(c, dirErr(err))
	}
	return keyView(k), nil
}

// dirErr maps directory failures to the envelope.
func dirErr(err error) error {
	if _, ok := ops.Replayed(err); ok {
		return err // made before: keyedErr answers its record
	}
	switch {
	case errors.Is(err, directory.ErrNotFound):
		return thttp.NewError(404, "not found")
	case errors.Is(err, ops.ErrUnavailable):
		return err // mapped by the layer
	}
	if fe, ok := errors.AsType[*directory.FieldError](err); ok {
		return thttp.NewError(400, fe.Error(), event.Detail{Field: fe.Field, Reason: fe.Reason})
	}
	return thttp.NewError(400, err.Error())
}

// paginate pages an in-memory list in order with an opaque cursor of the
// last id returned.
func paginate[T any](items []T, q bind.ListQuery, id func(T) string) (any, error) {
	after, err := bind.DecodeCursor(q.Cursor)
	if err != nil {
		return nil, err
	}
	start := 0
	if after != "" {
		start = -1
		for i, it := range items {
			if id(it) == after {
				start = i + 1
				break
			}
		}
		if start < 0 {
			return nil, thttp.NewError(400, "cursor: unknown cursor", event.Detail{Field: "cursor", Reason: "unknown cursor"})
		}
	}
	end := min(start+q.Limit, len(items))
	page := items[start:end]
	next := ""
	if len(page) > 0 {
		next = id(page[len(page)-1])
	}
	return bind.NewList(append([]T(nil), page...), end < len(items), next), nil
}
