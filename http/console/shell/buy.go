package shell

import (
	"fmt"
	"net/url"

	"github.com/valyala/fasthttp"

	"ticketd/event"
	"ticketd/internal/money"
)

// buyLinkKey is the budget the checkout link's sessions are counted
// against, per client address (the storefront's per (key, IP) budget,
// StorefrontIPLimitPerMinute): every link shares it, so one client cannot
// multiply its budget by opening many events' links.
const buyLinkKey = "console:buy-link"

// buyData is the checkout link's page: what the Buy button buys.
type buyData struct {
	Event, When, Type, Price, Action string
}

// buy answers the checkout link an organizer shares. GET shows the event,
// the ticket type and its price with a Buy button and creates nothing, so
// a chat app's link preview or a crawler following the link costs no
// checkout session; the button POSTs (no script needed), which creates a
// hosted checkout of one ticket, counted against the client's storefront
// budget, and sends the buyer there. A type that is not public, not of a
// published event, or unknown is "not on sale" (404), never told apart.
func (c *Console) buy(rc *fasthttp.RequestCtx) {
	eventID, typeID := Param(rc, "eventId"), Param(rc, "typeId")
	notFound := func() {
		c.Render(rc, 404, "message", &View{Title: "Not on sale", Message: "These tickets are not on sale. Check the address, or ask the organizer for a new link."})
	}
	if _, ok := c.Ops.EventUnit(eventID); !ok || typeID == "" || len(typeID) > 100 {
		notFound()
		return
	}
	if string(rc.Method()) != "POST" {
		ev, err := AskOp(c, eventID, event.GetEvent{})
		if err != nil || ev.Status != "published" {
			notFound()
			return
		}
		tt, err := AskOp(c, eventID, event.GetTicketType{ID: typeID})
		if err != nil || !tt.IsPublic {
			notFound()
			return
		}
		d := buyData{Event: ev.Name, Type: tt.Name, Price: money.Format(tt.PriceAmount, ev.Currency, "en"),
			Action: "/buy/" + url.PathEscape(eventID) + "/" + url.PathEscape(typeID)}
		if ev.StartsAt != nil {
			d.When = ShowTime(ev.StartsAt, ev.Timezone)
		}
		c.Render(rc, 200, "buy", &View{Title: tt.Name + " · " + ev.Name, Any: d})
		return
	}
	if c.takeIP != nil {
		if ok, wait := c.takeIP(rc, buyLinkKey); !ok {
			rc.Response.Header.Set("Retry-After", Itoa(wait))
			c.Render(rc, 429, "message", &View{Title: "Too many checkouts",
				Message: fmt.Sprintf("Too many checkouts were started from your connection in the last minute. Try again in %d seconds.", wait)})
			return
		}
	}
	cmd := event.CreateCheckoutSession{Items: []event.OrderItem{{ItemType: "registration_type", ItemID: typeID, Quantity: 1}}, Storefront: true}
	cs, err := AskOp(c, eventID, cmd)
	if err != nil {
		notFound()
		return
	}
	seeOther(rc, cs.URL)
	c.Headers(rc)
}
