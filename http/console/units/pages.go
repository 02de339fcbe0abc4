package units

import (
	"html/template"

	"ticketd/http/console/shell"
)

// pages are this package's handlers: the shell's Console, whose
// requests, rendering and asks they share.
type pages struct{ *shell.Console }

// funcs are the template functions this package's pages call, and
// pageNames the templates (templates/<name>.html of package shell) they
// render beyond the shell's own list; both are filled by init functions.
var (
	funcs     = template.FuncMap{}
	pageNames []string
)

// Area is this package's pages for shell.New: their routes over a
// console, the templates they render and the functions those call.
func Area() shell.Area {
	return shell.Area{Routes: func(c *shell.Console) []shell.Route { return (&pages{c}).unitRoutes() }, Pages: pageNames, Funcs: funcs}
}
