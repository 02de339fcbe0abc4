package event

import (
	"slices"
	"strings"
	"time"
)

// The console's dashboard of an event: what sold, is held, waits and
// entered, and the money kept, read from counters the state keeps up to
// date (index.dash), never from a scan of registrations, orders or
// check-ins: a dashboard polled by many browsers during a sale costs the
// event's actor a few map reads per poll.

// GetDashboard reads the event's dashboard counters.
type GetDashboard struct{}

// DoorCount is the number of check-ins at one door: SubjectType event,
// session or venue, and the session's or venue's id.
type DoorCount struct {
	SubjectType string  `json:"subjectType"`
	SubjectID   *string `json:"subjectId"`
	Checkins    int     `json:"checkins"`
}

// SalesBucket is the number of paid orders placed in one hour (Start, UTC).
type SalesBucket struct {
	Start  Time `json:"start"`
	Orders int  `json:"orders"`
}

// Dashboard answers GetDashboard. Revenue is the total of paid orders
// less their refunds, in the event's currency. Sales are paid orders by
// the hour they were placed, oldest first, at most dashBucketsMax hours
// (the newest).
type Dashboard struct {
	Sold       int           `json:"sold"`
	Held       int           `json:"held"`
	Waitlisted int           `json:"waitlisted"`
	PaidOrders int           `json:"paidOrders"`
	Revenue    Money         `json:"revenue"`
	Currency   string        `json:"currency"`
	Doors      []DoorCount   `json:"doors"`
	Sales      []SalesBucket `json:"sales"`
}

// dashBucketsMax bounds the hours a dashboard answers (two weeks).
const dashBucketsMax = 14 * 24

// dashCounters are the dashboard's counters in the state's index.
type dashCounters struct {
	doors      map[string]int // subjectType + ":" + subjectId -> check-ins
	hours      map[int64]int  // unix hour of placement -> paid orders
	paidOrders int
	revenue    Money
}

func newDashCounters() dashCounters {
	return dashCounters{doors: map[string]int{}, hours: map[int64]int{}}
}

// paid counts an order that became paid.
func (d *dashCounters) paid(o *OrderRec) {
	d.paidOrders++
	d.revenue += o.Total
	d.hours[o.CreatedAt.Unix()/3600]++
}

// indexOrder counts an order when the indexes are rebuilt: as paid did
// when it was paid, less the refunds that succeeded since.
func (d *dashCounters) indexOrder(o *OrderRec) {
	if o.Status != OrderStatusPaid && o.Status != OrderStatusRefunded {
		return
	}
	d.paid(o)
	for _, r := range o.Refunds {
		if r.Status == RefundSucceeded {
			d.revenue -= r.Amount
		}
	}
}

func (GetDashboard) result(*Dashboard) {}

func (c GetDashboard) decide(m *Machine, now time.Time) (any, []Change, error) {
	s := m.s
	d := Dashboard{PaidOrders: s.idx.dash.paidOrders, Revenue: s.idx.dash.revenue, Currency: s.Event.Currency,
		Doors: []DoorCount{}, Sales: []SalesBucket{}}
	for _, id := range s.TypeOrder {
		t := s.Types[id]
		d.Sold += t.Confirmed
		d.Held += t.Held
		d.Waitlisted += t.Waitlisted
	}
	for k, n := range s.idx.dash.doors {
		typ, id, _ := strings.Cut(k, ":")
		d.Doors = append(d.Doors, DoorCount{SubjectType: typ, SubjectID: strp(id), Checkins: n})
	}
	slices.SortFunc(d.Doors, func(a, b DoorCount) int {
		if a.SubjectType != b.SubjectType {
			if a.SubjectType == "event" {
				return -1
			}
			if b.SubjectType == "event" {
				return 1
			}
		}
		if a.Checkins != b.Checkins {
			return b.Checkins - a.Checkins
		}
		return strings.Compare(a.SubjectType+":"+deref(a.SubjectID), b.SubjectType+":"+deref(b.SubjectID))
	})
	hours := make([]int64, 0, len(s.idx.dash.hours))
	for h := range s.idx.dash.hours {
		hours = append(hours, h)
	}
	slices.Sort(hours)
	if len(hours) > dashBucketsMax {
		hours = hours[len(hours)-dashBucketsMax:]
	}
	for _, h := range hours {
		d.Sales = append(d.Sales, SalesBucket{Start: At(time.Unix(h*3600, 0).UTC()), Orders: s.idx.dash.hours[h]})
	}
	return d, nil, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
