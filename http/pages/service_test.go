package pages_test

import (
	"testing"

	"ticketd/app/apptest"
)

// service is the real service, app.Main, on a temp dir and a loopback port.
type service = apptest.Service

// unit is a business unit with one key of each type.
type unit = apptest.Unit

// serviceOption tweaks the service's configuration before it starts.
type serviceOption = apptest.Option

// startService starts the whole service. Rate limits are off unless an
// option sets them.
func startService(t testing.TB, opts ...serviceOption) *service {
	t.Helper()
	return apptest.Start(t, opts...)
}
