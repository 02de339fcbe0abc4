// Package adminctl is `ticketd admin`, the command-line client of the admin
// API (/admin/v1; not the web console under /console, which is
// http/console). Run reads a command line into one request (refusing,
// before sending anything, a line that misses a name), finds the server and
// its admin token the way `ticketd serve` keeps them, sends the request and
// prints the JSON answer.
//
// Concurrency: a Client holds no state besides its settings; its methods
// may be called from several goroutines, which then share Out.
package adminctl
