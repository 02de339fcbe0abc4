package pages

import (
	"context"
	"errors"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"ticketd/event"
	thttp "ticketd/http"
)

// The shop (decisions §19): the public event page /e/{eventId} lists each
// open public ticket type with its price and a Buy button (sold out shown,
// never a count). Buy creates a checkout session server-side and sends the
// buyer to the hosted checkout; when the event has a waiting room it joins
// the queue instead and sends the buyer to the queue page, which refreshes
// itself (meta refresh without script, queue.js with it) until the buyer
// is admitted, then creates the checkout session with the entry's queue
// token. /widget.js renders the same list on the organizer's own site
// through the Storefront API.
//
//	GET       /e/{eventId}                   the shop
//	POST      /e/{eventId}/buy               Buy (form: type)
//	GET, POST /e/{eventId}/queue/{queueId}   the queue page; POST goes to checkout once admitted
//	GET       /hosted/queue.js               the queue page's refresh
//	GET       /widget.js                     the embeddable shop

// The shop's Buy per client address: a queue join or a checkout session
// each (the Storefront API limits its own per key and address).
const (
	shopBuyLimit  = 20
	shopBuyWindow = time.Minute
)

func (p *Pages) registerShop(srv *thttp.Server) {
	srv.Handle("POST", "/e/{eventId}/buy", p.shopBuy)
	srv.Handle("GET", "/e/{eventId}/queue/{queueId}", p.queuePage)
	srv.Handle("POST", "/e/{eventId}/queue/{queueId}", p.queuePage)
	srv.Handle("GET", "/hosted/queue.js", p.script(queueJS))
	srv.Handle("GET", "/widget.js", p.script(widgetJS))
}

// shop renders the event's shop with an optional error.
func (p *Pages) shop(rc *fasthttp.RequestCtx, id string, l loc, status int, errText string) {
	c, err := ask(p, id, event.OnStorefront(event.GetCatalog{Lang: l.Lang}))
	if err != nil {
		p.fail(rc, l, err)
		return
	}
	v := &view{L: l, Title: c.Event.Name, EventName: c.Event.Name, When: when(c.Event, l.Lang), Tickets: c.TicketTypes,
		Currency: c.Event.Currency, EventID: c.Event.ID, Description: deref(c.Event.Description), Queue: c.WaitingRoom, Error: errText}
	// Where, under the header as on every page of the event; the shop
	// says it again in its own card.
	v.Place = p.place(c.Event, l.Lang, false)
	v.Venue = v.Place
	if c.WaitingRoom != nil {
		v.OnSale = when(event.Event{StartsAt: &c.WaitingRoom.OnSaleAt, Timezone: c.Event.Timezone}, l.Lang)
	}
	p.render(rc, status, "event", v)
}

// hostedClient is the hold limits' id of the buyer of a hosted page.
func (p *Pages) hostedClient(rc *fasthttp.RequestCtx) string {
	return thttp.HoldClientOf(hostedClients, thttp.ClientIP(rc, p.cfg.TrustedProxies))
}

func (p *Pages) shopBuy(rc *fasthttp.RequestCtx) {
	id, _ := rc.UserValue("eventId").(string)
	l := p.localeOf(rc, "")
	if !p.knownEvent(id, id != "") {
		p.notFound(rc, l)
		return
	}
	ip := "shop\x00" + thttp.ClientIP(rc, p.cfg.TrustedProxies).String()
	if wait, blocked := p.shopBuys.blocked(ip, time.Now()); blocked {
		rc.Response.Header.Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		p.message(rc, 429, l, "", l.T("err.busy"), nil)
		return
	}
	p.shopBuys.fail(ip, time.Now())
	typeID := string(rc.PostArgs().Peek("type"))
	c, err := ask(p, id, event.OnStorefront(event.GetCatalog{}))
	if err != nil {
		p.fail(rc, l, err)
		return
	}
	known := false
	for _, t := range c.TicketTypes {
		known = known || (t.ID == typeID && !t.SoldOut)
	}
	if !known {
		p.shop(rc, id, l, 412, l.T("err.soldout"))
		return
	}
	if c.WaitingRoom != nil {
		// Batched with the joins that arrive with it (ops.JoinQueue).
		q, err := p.cfg.Ops.JoinQueue(context.Background(), id, p.hostedClient(rc))
		if err != nil {
			p.shopError(rc, id, l, err)
			return
		}
		p.redirect(rc, "/e/"+url.PathEscape(id)+"/queue/"+url.PathEscape(q.QueueID)+"?type="+url.QueryEscape(typeID))
		return
	}
	p.checkoutFor(rc, id, l, typeID, "")
}

// checkoutFor creates the checkout session of one ticket and sends the
// buyer to it.
func (p *Pages) checkoutFor(rc *fasthttp.RequestCtx, id string, l loc, typeID, token string) {
	s, err := ask(p, id, event.OnStorefront(event.CreateCheckoutSession{
		Items:      []event.OrderItem{{ItemType: event.ItemRegistrationType, ItemID: typeID, Quantity: 1}},
		Storefront: true, Client: p.hostedClient(rc), QueueToken: token, Locale: localeParam(l),
	}))
	if err != nil {
		p.shopError(rc, id, l, err)
		return
	}
	p.redirect(rc, "/checkout/"+url.PathEscape(s.ID))
}

func localeParam(l loc) string {
	if l.Lang == "zh-CN" {
		return "zh-CN"
	}
	return ""
}

// shopError shows a refused Buy on the shop page.
func (p *Pages) shopError(rc *fasthttp.RequestCtx, id string, l loc, err error) {
	var ee *event.Error
	if !errors.As(err, &ee) || ee.Code == event.NotFound {
		p.fail(rc, l, err)
		return
	}
	switch {
	case ee.Reason == event.ReasonSoldOut:
		p.shop(rc, id, l, 412, l.T("err.soldout"))
	case ee.Reason == event.ReasonHoldLimit || ee.Reason == event.ReasonCheckoutSessionLimit:
		p.shop(rc, id, l, 429, l.T("err.hold_limit"))
	case ee.Reason == event.ReasonQueueTokenRequired || ee.Reason == event.ReasonQueueTokenInvalid:
		p.shop(rc, id, l, 412, l.T("queue.required"))
	default:
		p.shop(rc, id, l, 412, l.T("err.closed"))
	}
}

func (p *Pages) redirect(rc *fasthttp.RequestCtx, path string) {
	p.headers(rc)
	rc.Response.Header.Set("Location", path)
	rc.SetStatusCode(303)
}

func (p *Pages) queuePage(rc *fasthttp.RequestCtx) {
	id, _ := rc.UserValue("eventId").(string)
	qid, _ := rc.UserValue("queueId").(string)
	l := p.localeOf(rc, "")
	if !p.knownEvent(id, id != "") {
		p.notFound(rc, l)
		return
	}
	typeID := string(rc.QueryArgs().Peek("type"))
	if rc.IsPost() {
		typeID = string(rc.PostArgs().Peek("type"))
	}
	st, err := ask(p, id, event.OnStorefront(event.GetQueueStatus{ID: qid}))
	if err != nil {
		p.fail(rc, l, err)
		return
	}
	if rc.IsPost() && st.State == event.QueueAdmitted {
		p.checkoutFor(rc, id, l, typeID, st.QueueToken)
		return
	}
	c, err := ask(p, id, event.OnStorefront(event.GetCatalog{}))
	if err != nil {
		p.fail(rc, l, err)
		return
	}
	v := &view{L: l, Title: l.T("queue.title"), EventName: c.Event.Name, EventID: id, QueueState: st.State, TypeID: typeID,
		Retry: st.RetryAfterSeconds}
	switch st.State {
	case event.QueueWaiting:
		v.Refresh = max(1, st.RetryAfterSeconds)
		if st.Position != nil {
			v.Position = *st.Position
			v.Wait = (time.Duration(*st.EstimatedWaitSeconds) * time.Second).String()
			// Progress against where the entry stood when it first
			// polled is not known to a stateless page: show the share
			// of a ten-minute wait left.
			v.Progress = max(0, 100-*st.EstimatedWaitSeconds*100/600)
		} else {
			v.OnSale = when(event.Event{StartsAt: &st.OnSaleAt, Timezone: c.Event.Timezone}, l.Lang)
		}
	case event.QueueAdmitted:
		v.Title = l.T("queue.checkout")
		v.Refresh = 0
	case event.QueueSoldOut:
		v.Title = l.T("soldout")
	default:
		v.Title = l.T("queue.expired")
	}
	rc.Response.Header.Set("Retry-After", strconv.Itoa(st.RetryAfterSeconds))
	p.render(rc, 200, "queue", v)
	// The queue page runs its own script (and nothing else's).
	rc.Response.Header.Set("Content-Security-Policy", strings.Replace(string(rc.Response.Header.Peek("Content-Security-Policy")),
		"default-src 'none';", "default-src 'none'; script-src 'self';", 1))
}

// script serves one of the pages' scripts.
func (p *Pages) script(src string) func(rc *fasthttp.RequestCtx) {
	return func(rc *fasthttp.RequestCtx) {
		rc.SetContentType("text/javascript; charset=utf-8")
		rc.Response.Header.Set("Cache-Control", "public, max-age=300")
		rc.Response.Header.Set("Access-Control-Allow-Origin", "*")
		rc.SetBodyString(src)
	}
}

// queueJS refreshes the queue page at its Retry-After, and once admitted
// goes on to checkout by itself.
const queueJS = `(function () {
  var q = document.getElementById('queue');
  if (!q) return;
  if (q.dataset.state === 'admitted') {
    var f = document.getElementById('q-go');
    if (f) f.submit();
    return;
  }
  if (q.dataset.state !== 'waiting') return;
  var s = parseInt(q.dataset.retry, 10) || 5;
  setTimeout(function () { location.reload(); }, Math.max(1, s) * 1000);
})();
`

// widgetJS is the embeddable shop: <script src="{base}/widget.js"
// data-event="evt_..." data-key="pk_..."></script> renders the event's
// ticket types with Buy buttons after itself, through the Storefront API
// (CORS by the key's origins: the page's origin must be one), and buys
// as the shop page does: through the waiting room when the event has one,
// then a checkout session and the hosted checkout. No framework, no
// external fonts; it inherits the page's styles.
const widgetJS = `(function () {
  var me = document.currentScript;
  if (!me) return;
  var ev = me.getAttribute('data-event'), key = me.getAttribute('data-key');
  var base = new URL(me.src, location.href).origin;
  var box = document.createElement('div');
  box.className = 'ticketd-widget';
  me.parentNode.insertBefore(box, me.nextSibling);
  var note = document.createElement('p');
  note.className = 'ticketd-note';
  note.setAttribute('role', 'status');
  function api(method, path, body, token) {
    var h = { 'Authorization': 'Bearer ' + key };
    if (body) h['Content-Type'] = 'application/json';
    if (token) h['Queue-Token'] = token;
    return fetch(base + '/storefront/v1/events/' + encodeURIComponent(ev) + path,
      { method: method, headers: h, body: body ? JSON.stringify(body) : undefined })
      .then(function (r) { return r.json().then(function (j) { if (!r.ok) throw j; return j; }); });
  }
  function say(text) { note.textContent = text; }
  function fail(e) { say((e && e.error && e.error.message) || 'Something went wrong. Please try again.'); }
  function money(a, cur) {
    if (!a) return 'Free';
    try { return new Intl.NumberFormat(undefined, { style: 'currency', currency: cur }).format(a); } catch (x) { return a + ' ' + cur; }
  }
  function checkout(typeId, token) {
    return api('POST', '/checkout-sessions', { items: [{ itemType: 'registration_type', itemId: typeId, quantity: 1 }] }, token)
      .then(function (s) { location.href = s.url; });
  }
  function wait(qid, typeId) {
    api('GET', '/queue/' + encodeURIComponent(qid)).then(function (q) {
      if (q.state === 'admitted') { say('It is your turn: going to checkout.'); return checkout(typeId, q.queueToken); }
      if (q.state === 'sold_out') { say('Sorry, this is sold out.'); return; }
      if (q.state === 'expired') { say('Your place in the queue has expired.'); return; }
      say(q.position ? 'You are in the queue: position ' + q.position + ' (about ' + q.estimatedWaitSeconds + ' s).'
        : 'You are in the queue. The sale opens at ' + new Date(q.onSaleAt).toLocaleString() + '.');
      setTimeout(function () { wait(qid, typeId); }, Math.max(1, q.retryAfterSeconds) * 1000);
    }).catch(fail);
  }
  function buy(typeId, queued) {
    if (queued) { api('POST', '/queue', {}).then(function (q) { say('You are in the queue.'); wait(q.queueId, typeId); }).catch(fail); return; }
    checkout(typeId).catch(fail);
  }
  api('GET', '').then(function (c) {
    var h = document.createElement('h3');
    h.textContent = c.event.name;
    box.appendChild(h);
    var ul = document.createElement('ul');
    c.ticketTypes.forEach(function (t) {
      var li = document.createElement('li');
      li.setAttribute('data-type', t.id);
      li.appendChild(document.createTextNode(t.name + ': ' + money(t.priceAmount, c.event.currency) + ' '));
      if (t.soldOut) {
        var s = document.createElement('span'); s.className = 'ticketd-soldout'; s.textContent = 'Sold out'; li.appendChild(s);
      } else {
        var b = document.createElement('button'); b.type = 'button'; b.textContent = 'Buy';
        b.addEventListener('click', function () { b.disabled = true; buy(t.id, !!c.waitingRoom); });
        li.appendChild(b);
      }
      ul.appendChild(li);
    });
    box.appendChild(ul);
    box.appendChild(note);
  }).catch(function (e) { box.appendChild(note); fail(e); });
})();
`
