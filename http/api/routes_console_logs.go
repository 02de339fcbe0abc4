package api

import (
	"errors"
	"strconv"
	"time"

	"ticketd/audit"
	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/http/bind"
	"ticketd/http/devlog"
)

// The console's logs (admin API): the developer log of a unit's API keys
// and the unit's audit log. Both are fed by http/instrument and
// Config.OnRequest (devlog.Register).

// RequestLogQuery filters GET .../request-log.
type RequestLogQuery struct {
	bind.ListQuery
	KeyID  string    `query:"keyId" v:"maxLen=100" doc:"Only requests of this API key."`
	Status int       `query:"status" v:"min=100,max=599" doc:"Only requests answered with this status."`
	Method string    `query:"method" v:"enum=GET|POST|PUT|PATCH|DELETE|OPTIONS|HEAD" doc:"Only requests of this method."`
	Since  time.Time `query:"since" doc:"Only requests at or after this time."`
	Until  time.Time `query:"until" doc:"Only requests before this time."`
}

// AuditLogQuery filters GET .../audit-log.
type AuditLogQuery struct {
	bind.ListQuery
	KeyID       string    `query:"keyId" v:"maxLen=100" doc:"Only changes by this API key (\"admin\": the console)."`
	OperationID string    `query:"operationId" v:"maxLen=100" doc:"Only changes by this operation."`
	Method      string    `query:"method" v:"enum=POST|PUT|PATCH|DELETE" doc:"Only changes by this method."`
	TargetID    string    `query:"targetId" v:"maxLen=200" doc:"Only changes whose path names this id."`
	Since       time.Time `query:"since" doc:"Only changes at or after this time."`
	Until       time.Time `query:"until" doc:"Only changes before this time."`
}

func (a *api) consoleLogRoutes() []thttp.Route {
	adm := func(r thttp.Route) thttp.Route { r.Surface = thttp.Admin; r.Tag = "Logs"; return r }
	return []thttp.Route{
		adm(thttp.Route{Method: "GET", Path: "/admin/v1/business-units/{unitId}/request-log", OperationID: "listRequestLog",
			Summary: "List the requests of the unit's API keys, newest first (developer log)", Query: RequestLogQuery{},
			Success: 200, Response: bind.List[devlog.RequestLogEntry]{}, Errors: []int{400, 404}, Handle: a.listRequestLog}),
		adm(thttp.Route{Method: "GET", Path: "/admin/v1/business-units/{unitId}/audit-log", OperationID: "listAuditLog",
			Summary: "List the changes made in the unit through the Developer API and the console, newest first",
			Query:   AuditLogQuery{}, Success: 200, Response: bind.List[audit.AuditEntry]{}, Errors: []int{400, 404},
			Handle: a.listAuditLog}),
	}
}

// unitParam returns the path's business unit if it exists.
func (a *api) unitParam(c *thttp.Ctx) (string, error) {
	id := c.Param("unitId")
	if ok, err := a.unitKnown(id); err != nil {
		return "", err
	} else if !ok {
		return "", thttp.NewError(404, "business unit not found")
	}
	return id, nil
}

func (a *api) listRequestLog(c *thttp.Ctx) (any, error) {
	var q RequestLogQuery
	if err := c.BindQuery(&q); err != nil {
		return nil, err
	}
	unit, err := a.unitParam(c)
	if err != nil {
		return nil, err
	}
	pos, err := bind.DecodeCursor(q.Cursor)
	if err != nil {
		return nil, err
	}
	var before uint64
	if pos != "" {
		if before, err = strconv.ParseUint(pos, 10, 64); err != nil {
			return nil, event.FieldError("cursor", "is not a valid cursor")
		}
	}
	f := devlog.Filter{KeyID: q.KeyID, Status: q.Status, Method: q.Method, Since: q.Since, Until: q.Until}
	items, more := a.devlog.List(unit, f, before, q.Limit, c.Now())
	next := ""
	if more && len(items) > 0 {
		next = items[len(items)-1].ID[len("rl_"):]
	}
	return bind.NewList(items, more, next), nil
}

func (a *api) listAuditLog(c *thttp.Ctx) (any, error) {
	var q AuditLogQuery
	if err := c.BindQuery(&q); err != nil {
		return nil, err
	}
	unit, err := a.unitParam(c)
	if err != nil {
		return nil, err
	}
	after, err := bind.DecodeCursor(q.Cursor)
	if err != nil {
		return nil, err
	}
	f := audit.Filter{Actor: q.KeyID, OperationID: q.OperationID, Method: q.Method, TargetID: q.TargetID,
		Since: q.Since, Until: q.Until}
	items, more, err := a.auditLog.List(unit, f, after, q.Limit)
	if errors.Is(err, audit.ErrBadAfter) {
		return nil, event.FieldError("cursor", "is not a valid cursor")
	}
	if err != nil {
		return nil, err
	}
	next := ""
	if more && len(items) > 0 {
		next = items[len(items)-1].ID
	}
	return bind.NewList(items, more, next), nil
}
