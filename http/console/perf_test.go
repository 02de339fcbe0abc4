package console_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
	"ticketd/event"
)

// TestPagesOfALargeEvent measures the console's pages of an event with
// TICKETD_CONSOLE_PERF registrations (say 100000; skipped when unset):
// the median of 9 renders of each page, logged; every page must stay
// under 100 ms (the attendees CSV, a download of every registration, is
// measured only).
func TestPagesOfALargeEvent(t *testing.T) {
	n := 0
	if _, err := fmt.Sscan(os.Getenv("TICKETD_CONSOLE_PERF"), &n); err != nil || n <= 0 {
		t.Skip("set TICKETD_CONSOLE_PERF=100000 to measure")
	}
	s := apptest.Start(t)
	op := operator(t, s)
	unit := op.newUnit("Large")
	ev := op.newEvent(unit, "Large event")
	require.Equal(t, 303, op.post("/console/events/"+ev+"/ticket-types", "ttName", "Free", "priceAmount", "0", "status", "open").Status)
	require.Equal(t, 303, op.post("/console/events/"+ev+"/publish").Status)
	types, err := s.Sys.Ask(context.Background(), ev, event.ListTicketTypes{Limit: 10})
	require.NoError(t, err)
	free := types.(event.List[event.TicketType]).Data[1].ID
	start := time.Now()
	var firstCode string // the oldest registration's check-in code
	var wg sync.WaitGroup
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += 64 {
				res, err := s.Sys.Ask(context.Background(), ev, event.CreateRegistration{
					Email: fmt.Sprintf("p%d@example.com", i), Name: fmt.Sprintf("Person %d", i), RegistrationTypeID: free})
				if err != nil {
					t.Error(err)
					return
				}
				if i == 0 {
					firstCode = res.(event.RegistrationResult).CheckinCode
				}
			}
		}(w)
	}
	wg.Wait()
	t.Logf("%d registrations in %s", n, time.Since(start).Round(time.Millisecond))
	pages := []struct {
		path    string
		bounded bool // must render under 100 ms
	}{
		{"/console/events/" + ev, true},
		{"/console/events/" + ev + "/dashboard", true},
		{"/console/events/" + ev + "/dashboard/live", true},
		{"/console/events/" + ev + "/orders", true},
		{"/console/events/" + ev + "/attendees", true},
		{"/console/events/" + ev + "/door?q=p77@example.com", true}, // the core's email index
		{"/console/events/" + ev + "/door?q=Person%2099999", true},  // a name: a bounded scan
		{"/console/events/" + ev + "/door?q=" + firstCode, true},    // the core's check-in code index
		{"/console/units/" + unit, true},
		{"/console/events/" + ev + "/attendees.csv", false}, // a download of the whole list, not a page
	}
	for _, p := range pages {
		var ds []time.Duration
		for i := 0; i < 9; i++ {
			t0 := time.Now()
			res := op.get(p.path)
			ds = append(ds, time.Since(t0))
			require.Equal(t, 200, res.Status, p.path)
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		t.Logf("%-60s median %8s  max %8s", p.path[len("/console/events/")-1:], ds[4].Round(10*time.Microsecond), ds[8].Round(10*time.Microsecond))
		if p.bounded {
			require.Less(t, ds[4], 100*time.Millisecond, p.path)
		}
	}
}
