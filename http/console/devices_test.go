package console_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
)

// TestDevicesPage: an admin makes a door device on the event's devices
// page and sees its setup link as a QR code once; the link initializes
// the device on /door/v1; the list shows it active and seen; revoke
// makes its key answer 401.
func TestDevicesPage(t *testing.T) {
	s := apptest.Start(t)
	op := operator(t, s)
	unit := op.newUnit("Devices Unit")
	ev := op.newEvent(unit, "Gate night")
	page := "/console/events/" + ev + "/devices"

	p := op.get(page)
	require.Equal(t, 200, p.Status, p.Body)
	assert.Contains(t, p.Body, "No device yet.")
	assert.Contains(t, p.Body, `value="event"`, "the event's door can be picked")

	p = op.post(page, "name", "")
	assert.Equal(t, 400, p.Status)
	p = op.post(page, "name", "North gate", "door", "venue:ven_404")
	assert.Equal(t, 400, p.Status, "an unknown door")

	p = op.post(page, "name", "North gate", "door", "event")
	require.Equal(t, 201, p.Status, p.Body)
	assert.Contains(t, p.Body, `id="setup-qr" src="data:image/png;base64,`)
	setup := regexp.MustCompile(`id="setup-url" class="mono" href="([^"]+)"`).FindStringSubmatch(p.Body)
	require.Len(t, setup, 2)
	code := strings.TrimPrefix(setup[1], s.URL+"/door?setup=")
	require.NotEqual(t, setup[1], code)

	dev, key, err := s.Sys.InitializeDevice(context.Background(), code, "")
	require.NoError(t, err)
	s.Sys.Watch().NoteDeviceSeen(dev.ID, dev.CreatedAt)
	p = op.get(page)
	assert.NotContains(t, p.Body, code, "the setup code is shown once")
	assert.Contains(t, p.Body, `id="device-`+dev.ID+`"`)
	assert.Contains(t, p.Body, "<td>active</td>")
	assert.Contains(t, p.Body, "Main entrance (event)")
	assert.NotContains(t, p.Body, ">never<")

	require.Equal(t, 303, op.post(page+"/"+dev.ID+"/revoke").Status)
	p = op.get(page)
	assert.Contains(t, p.Body, "<td>revoked</td>")
	_, ok := s.Sys.Directory().LookupDevice(key)
	assert.False(t, ok, "a revoked device's key is gone")
	assert.Equal(t, 404, op.post("/console/events/"+ev+"/devices/dev_404/revoke").Status)
}
