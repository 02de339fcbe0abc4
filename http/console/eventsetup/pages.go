package eventsetup

import "ticketd/http/console/shell"

// pages are this package's handlers: the shell's Console, whose
// requests, rendering and asks they share.
type pages struct{ *shell.Console }

// Routes are the signed-in routes of this package's pages over c (New's
// areas).
func Routes(c *shell.Console) []shell.Route { return (&pages{c}).eventRoutes() }
