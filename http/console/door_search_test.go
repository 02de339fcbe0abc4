package console_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
	"ticketd/event"
)

// TestDoorFindsAnyRegistrationByEmailOrCode: the door page finds the
// oldest of more registrations than a name search reads, by its email
// (any case) and by its check-in code (any case), from the core's
// indexes; a name is looked for among the newest.
func TestDoorFindsAnyRegistrationByEmailOrCode(t *testing.T) {
	s := apptest.Start(t)
	op := operator(t, s)
	unit := op.newUnit("Door Unit")
	ev := op.newEvent(unit, "Big night")
	require.Equal(t, 303, op.post("/console/events/"+ev+"/ticket-types", "ttName", "Free", "priceAmount", "0", "status", "open").Status)
	require.Equal(t, 303, op.post("/console/events/"+ev+"/publish").Status)
	types, err := s.Sys.Ask(context.Background(), ev, event.ListTicketTypes{Limit: 10})
	require.NoError(t, err)
	free := types.(event.List[event.TicketType]).Data[1].ID
	var first event.RegistrationResult
	for i := range 2100 {
		res, err := s.Sys.Ask(context.Background(), ev, event.CreateRegistration{
			Email: fmt.Sprintf("p%d@example.com", i), Name: fmt.Sprintf("Person %d", i), RegistrationTypeID: free})
		require.NoError(t, err)
		if i == 0 {
			first = res.(event.RegistrationResult)
		}
	}
	door := "/console/events/" + ev + "/door?q="
	for _, q := range []string{"P0@Example.com", first.CheckinCode, strings.ToLower(first.CheckinCode)} {
		p := op.get(door + q)
		require.Equal(t, 200, p.Status)
		assert.Contains(t, p.Body, `id="checkin-`+first.ID+`"`, "found by %s", q)
	}
	p := op.get(door + "Person%202099")
	assert.Contains(t, p.Body, "p2099@example.com", "a recent name")
	p = op.get(door + "CHK-NOSUCHCODE")
	assert.NotContains(t, p.Body, `id="checkin-`)
}
