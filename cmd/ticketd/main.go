// Command ticketd is the event-ticketing service.
//
//	ticketd serve [flags]   start the HTTP server (see ticketd serve -h)
//	ticketd admin ...       call the admin API (/admin/v1) of a running server (internal/adminctl)
//	ticketd version         print the build's version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"ticketd/app"
	"ticketd/internal/adminctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// programName is the binary as the person typed it: a path they ran
// ("./bin/ticketd") is printed as such; a bare name came from $PATH.
func programName(arg0 string) string {
	if arg0 == "" || strings.HasPrefix(filepath.Base(arg0), "__debug") || strings.Contains(arg0, "go-build") {
		return "ticketd"
	}
	return arg0
}

const usage = `ticketd is the event-ticketing service.

usage:
  ticketd serve [flags]      start the HTTP server (ticketd serve -h lists the flags)
  ticketd admin <command>    call the console API of a running server (ticketd admin -h)
  ticketd version            print the build's version
  ticketd help [command]     print this help, or a command's`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[0] == "help" && args[1] != "help" {
			return run(ctx, []string{args[1], "-h"}, stdout, stderr)
		}
		fmt.Fprintln(stdout, usage)
		return 0
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, "ticketd", buildVersion())
		return 0
	case "serve":
		applyGCPolicy(os.LookupEnv)
		cfg, err := ParseConfig(args[1:], os.LookupEnv, stdout)
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		if err != nil {
			fmt.Fprintln(stderr, "ticketd serve:", err)
			return 2
		}
		cfg.Program = programName(os.Args[0])
		m := app.NewMain(cfg, stdout)
		if err := m.Run(ctx); err != nil {
			fmt.Fprintln(stderr, "ticketd:", err)
			return 1
		}
		return 0
	case "admin":
		return adminctl.Run(ctx, args[1:], os.LookupEnv, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "ticketd: unknown command %q\n\n%s\n", args[0], usage)
		return 2
	}
}
