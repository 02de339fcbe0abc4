package event_test

import (
	"fmt"
	"strconv"
	"time"

	"ticketd/event"
)

// counterIDs is a deterministic IDs source for the example.
type counterIDs struct{ n int }

func (c *counterIDs) New(prefix string) string { c.n++; return prefix + strconv.Itoa(c.n) }
func (c *counterIDs) Code(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"[(c.n+i)%32]
	}
	c.n++
	return string(b)
}

// Example shows the shell's loop: Decide, log the changes (here: encode and
// decode them), Apply, answer with the result.
func Example() {
	m := event.NewMachine("evt_demo", event.Config{BaseURL: "https://tickets.example", OrderHold: 15 * time.Minute}, &counterIDs{})
	now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	do := func(c event.Command) any {
		res, changes, err := m.Decide(now, c)
		if err != nil {
			return err
		}
		for _, ch := range changes {
			b, _ := event.MarshalChange(ch) // the shell appends b to its log
			back, _ := event.UnmarshalChange(b)
			m.Apply(back)
		}
		return res
	}
	capacity := 1
	do(event.CreateEvent{Name: "GopherCon", Timezone: "Europe/Berlin"})
	tt := do(event.CreateTicketType{Name: "GA", Capacity: &capacity}).(event.TicketType)
	do(event.UpdateTicketType{ID: tt.ID, Status: event.Some(event.SellOpen)})

	reg := do(event.CreateRegistration{Email: "ada@example.com", RegistrationTypeID: tt.ID}).(event.RegistrationResult)
	fmt.Println(reg.Status, reg.Created)
	fmt.Println(do(event.CreateRegistration{Email: "bob@example.com", RegistrationTypeID: tt.ID}))
	in := do(event.RecordCheckin{CheckinCode: reg.CheckinCode, SubjectType: "event"}).(event.CheckinResult)
	again := do(event.RecordCheckin{RegistrationID: reg.ID, SubjectType: "event"}).(event.CheckinResult)
	fmt.Println(in.AlreadyCheckedIn, again.AlreadyCheckedIn, in.Checkin.ID == again.Checkin.ID)
	// Output:
	// confirmed true
	// sold out
	// false true true
}
