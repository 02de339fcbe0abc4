package event

import "time"

func (m *Machine) decideCommerce(now time.Time, c Command) (any, []Change, error) {
	switch c.(type) {
	case Expire:
		return nil, nil, nil
	}
	return nil, nil, Errorf(InvalidArgument, "unsupported command %T", c)
}

// NextDeadline reports the earliest instant at which Expire would produce
// changes (a hold lapsing).
func (m *Machine) NextDeadline() (time.Time, bool) { return time.Time{}, false }
