package event

import "time"

// Storefront wraps a command that arrives through the publishable-key
// Storefront API. The storefront sees only published events: for any other
// event every storefront command answers the same NotFound as a missing or
// foreign event, so a draft cannot be told apart from nothing. Wrapping
// (rather than a second check by the caller) keeps it to one round trip to
// the event's actor on the order-placement hot path.
type Storefront struct {
	Cmd Command
}

// storefronter is a command wrapped for the storefront: Storefront, or
// the typed form OnStorefront makes.
type storefronter interface {
	Command
	storefront() Storefront
}

func (c Storefront) storefront() Storefront { return c }

// decide is never called: Decide unwraps a storefront command first.
func (c Storefront) decide(m *Machine, now time.Time) (any, []Change, error) {
	return m.decideStorefront(now, c)
}

// OnStorefront wraps c for the storefront (see Storefront) and keeps its
// result type.
func OnStorefront[R any](c Op[R]) Op[R] { return storefrontOp[R]{Storefront{Cmd: c}} }

type storefrontOp[R any] struct{ Storefront }

func (storefrontOp[R]) result(*R) {}

func (m *Machine) decideStorefront(now time.Time, c Storefront) (any, []Change, error) {
	if m.s.Event == nil || m.s.Event.Status != EventPublished || c.Cmd == nil {
		return nil, nil, Errorf(NotFound, "event not found")
	}
	if _, nested := c.Cmd.(storefronter); nested {
		return nil, nil, Errorf(InvalidArgument, "nested storefront command")
	}
	return m.Decide(now, c.Cmd)
}

// GetPayment reads the order a payment id belongs to: what the sandbox
// provider's hosted payment page shows.
type GetPayment struct {
	ID string `json:"-"`
}

func (m *Machine) getPayment(c GetPayment) (any, []Change, error) {
	id, ok := m.s.idx.orderByPayment[c.ID]
	if !ok || c.ID == "" {
		return nil, nil, Errorf(NotFound, "payment not found")
	}
	return m.orderView(m.s.Orders[id]), nil, nil
}
