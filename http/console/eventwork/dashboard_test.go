package eventwork

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"ticketd/event"
)

// TestSalesChartHasATimeAxis: sales within one hour still draw a day's
// axis of hours in the event's timezone (not one lone bar); sales over a
// week draw days.
func TestSalesChartHasATimeAxis(t *testing.T) {
	now := time.Date(2030, 5, 20, 14, 30, 0, 0, time.UTC)
	one := []event.SalesBucket{{Start: event.At(now.Truncate(time.Hour)), Orders: 3}}
	svg := string(salesChart(one, "Europe/Paris", now))
	assert.Contains(t, svg, "Paid orders per hour")
	assert.Contains(t, svg, "3 in all, at most 3 in one hour")
	assert.Equal(t, 1, strings.Count(svg, "<rect"), "one hour with sales")
	assert.GreaterOrEqual(t, strings.Count(svg, `text-anchor="middle"`), 4, "hour ticks along a day")
	assert.Contains(t, svg, ">18:00<", "labels in the event's timezone (16:00 UTC is 18:00 in Paris)")

	var week []event.SalesBucket
	for d := 0; d < 7; d++ {
		week = append(week, event.SalesBucket{Start: event.At(now.Add(time.Duration(d-7) * 24 * time.Hour).Truncate(time.Hour)), Orders: d + 1})
	}
	svg = string(salesChart(week, "Europe/Paris", now))
	assert.Contains(t, svg, "Paid orders per day")
	assert.Contains(t, svg, "28 in all, at most 7 in one day")
	assert.Contains(t, svg, ">13 May<")
}
