package api

import (
	"strconv"

	"ticketd/event"
	thttp "ticketd/http"
)

// queueRoutes are the waiting room's storefront routes (decisions §19):
// join the event's queue and poll an entry. Joins are limited per
// (publishable key, client IP) like order placement (IPLimited); a poll
// answers Retry-After, the pace the entry should poll at.
func (a *api) queueRoutes() []thttp.Route {
	sf := func(r thttp.Route) thttp.Route { r.Surface = thttp.Storefront; return r }
	// The handlers are built once, not per request: a drop's every
	// buyer joins and polls.
	// The poll is noted (by the actor, or with the sale view that answers
	// it): an entry not polled expires.
	poll := storefrontCmd(a, func(c *thttp.Ctx, cmd *event.GetQueueStatus) { cmd.ID = c.Param("queueId") })
	return []thttp.Route{
		sf(thttp.Route{Method: "POST", Path: "/storefront/v1/events/{publicId}/queue", OperationID: "joinQueue", Hot: true, Tag: "Waiting room",
			Summary: "Join the event's waiting room: durable before it answers; poll the entry at its retryAfterSeconds",
			Body:    event.JoinQueue{}, Success: 201, Response: event.QueueStatus{}, Errors: []int{400, 404, 412}, IPLimited: true, RetryAfter: true,
			Handle: a.joinQueue}),
		sf(thttp.Route{Method: "GET", Path: "/storefront/v1/events/{publicId}/queue/{queueId}", OperationID: "getQueueEntry", Hot: true, Tag: "Waiting room",
			Summary: "Poll a queue entry: its position, or its queueToken once admitted, or sold_out / expired",
			Success: 200, Response: event.QueueStatus{}, Errors: []int{404}, RetryAfter: true,
			Handle: func(c *thttp.Ctx) (any, error) {
				// The sale view first, before a command is boxed for the
				// actor: a drop's every waiter polls.
				if id, err := a.storefrontEventOf(c); err == nil {
					if st, ok := a.ops.QueueFromView(id, c.Param("queueId")); ok {
						return queueAnswer(c, st, nil)
					}
				}
				res, err := poll(c)
				return queueAnswer(c, res, err)
			}}),
	}
}

// joinQueue joins the event's queue: with the joins that arrive with it,
// in one batch (ops.JoinQueue).
func (a *api) joinQueue(c *thttp.Ctx) (any, error) {
	id, err := a.storefrontEventOf(c)
	if err != nil {
		return nil, err
	}
	var body event.JoinQueue
	if err := c.Bind(&body); err != nil {
		return nil, err
	}
	st, err := a.ops.JoinQueue(keyed(c, nil), id, c.HoldClient())
	if err != nil {
		return nil, keyedErr(c, err)
	}
	return queueAnswer(c, st, nil)
}

// queueAnswer sets the Retry-After header of a queue status.
func queueAnswer(c *thttp.Ctx, res any, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	if st, ok := res.(event.QueueStatus); ok {
		// The key as fasthttp normalizes it, the value from the stack: a
		// drop's every poll sets it.
		var b [20]byte
		c.RequestCtx().Response.Header.SetCanonical(hdrRetryAfter, strconv.AppendInt(b[:0], int64(st.RetryAfterSeconds), 10))
	}
	return res, nil
}

var hdrRetryAfter = []byte("Retry-After")

// queueToken is the request's Queue-Token header.
func queueToken(c *thttp.Ctx) string {
	v, _ := thttp.PeekHeader(&c.RequestCtx().Request.Header, "Queue-Token")
	return string(v)
}
