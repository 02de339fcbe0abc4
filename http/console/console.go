package console

import (
	"ticketd/http/console/eventsetup"
	"ticketd/http/console/eventwork"
	"ticketd/http/console/shell"
	"ticketd/http/console/units"
)

// Config is what the console needs of the service (shell.Config).
type Config = shell.Config

// Deps are the parts of the service the console calls (shell.Deps).
type Deps = shell.Deps

// WalletStatus is one wallet as the operator sees it (shell.WalletStatus).
type WalletStatus = shell.WalletStatus

// Console serves the console pages (shell.Console).
type Console = shell.Console

// SignInUnit is the unit id under which sign-ins naming no member are
// recorded in the audit log (shell.SignInUnit).
const SignInUnit = shell.SignInUnit

// areas are the page packages.
func areas() []shell.Area { return []shell.Area{units.Area(), eventsetup.Area(), eventwork.Area()} }

// DefaultConfig returns the console's defaults.
func DefaultConfig() Config { return shell.DefaultConfig() }

// New parses the templates and returns the console of cfg over deps,
// serving every page package's routes.
func New(cfg Config, deps Deps) (*Console, error) { return shell.New(cfg, deps, areas()...) }

// WriteRoutes lists the signed-in POST routes as paths (tests walk every
// one for the role and CSRF rules).
func WriteRoutes() []string { return shell.WriteRoutes(areas()...) }
