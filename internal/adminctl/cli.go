package adminctl

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

const adminUsage = `usage: ticketd admin [-url URL] [-token TOKEN] <command>

commands:
  units create NAME
  units list
  keys create UNIT_ID [-type secret|publishable] [-name N] [-origin O]... [-expires-at RFC3339] [-version YYYY-MM-DD]
  keys list UNIT_ID
  keys revoke KEY_ID
  outbox list [-limit N]          the mail the service still owes (all of it, without SMTP)
  outbox preview ID [-eml]        one queued email as it would be sent (-eml: the raw message)
  outbox retry ID                 send a parked email again
  get PATH | delete PATH | post PATH [JSON] | patch PATH JSON | put PATH JSON
      raw calls of the admin API, e.g. "ticketd admin post /admin/v1/events/evt_.../venues '{\"name\":\"Hall A\"}'"

Flags may come before or after the names, and -name NAME and -unit UNIT_ID work as well.
The URL defaults to $TICKETD_BASE_URL or http://$TICKETD_ADDR; the token to $TICKETD_ADMIN_TOKEN or the
admin-token file in $TICKETD_DATA_DIR (./data).`

// usageError is a command line the admin CLI refuses before sending
// anything: it exits 2, like a flag error.
type usageError string

func (e usageError) Error() string { return string(e) }

// request is the one call of the admin API a command line stands for.
type request struct {
	method, path string
	body         []byte
}

// Run is `ticketd admin`: it reads args (what follows "admin"), sends the
// request they stand for and returns the exit status: 0 done, 1 the call
// failed (the answer is on stdout), 2 a command line it refuses without
// sending anything. lookup is os.LookupEnv outside tests.
func Run(ctx context.Context, args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) int {
	var c Client
	req, err := parseAdmin(args, &c)
	if err == nil {
		c = c.FromEnv(lookup)
		c.Out = stdout
		err = c.Do(ctx, req.method, req.path, req.body)
	}
	var usage usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintln(stdout, adminUsage)
		return 0
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "ticketd admin: %v\n(ticketd admin -h lists the commands)\n", err)
		return 2
	}
	fmt.Fprintln(stderr, "ticketd admin:", err)
	return 1
}

// adminFlags is a flag set that also takes -url and -token, so they may
// come anywhere on the line; it prints nothing (Run does).
func adminFlags(c *Client) *flag.FlagSet {
	fs := flag.NewFlagSet("ticketd admin", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&c.BaseURL, "url", c.BaseURL, "base URL of the server")
	fs.StringVar(&c.Token, "token", c.Token, "admin token")
	return fs
}

// parseArgs parses flags anywhere among args (package flag stops at the
// first name) and returns the names in order.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var names []string
	for {
		if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
			return nil, err
		} else if err != nil {
			return nil, usageError(err.Error())
		}
		if fs.NArg() == 0 {
			return names, nil
		}
		names, args = append(names, fs.Arg(0)), fs.Args()[1:]
	}
}

// positional sets *v from the one name allowed in names unless its flag
// did; missing names what to ask for when neither did.
func positional(cmd string, names []string, v *string, missing string) error {
	if len(names) > 0 && *v == "" {
		*v, names = names[0], names[1:]
	}
	if len(names) > 0 {
		return usageError(fmt.Sprintf("%s: unexpected argument %q", cmd, names[0]))
	}
	if *v == "" {
		return usageError(cmd + ": missing " + missing)
	}
	return nil
}

// parseAdmin reads a command line into the request it stands for.
func parseAdmin(args []string, c *Client) (request, error) {
	if err := parse(adminFlags(c), &args); err != nil {
		return request{}, err
	}
	if len(args) == 0 {
		return request{}, usageError("missing a command: units, keys, outbox, get, post, patch, put or delete")
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "help":
		return request{}, flag.ErrHelp
	case "units", "keys", "outbox":
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			return request{}, flag.ErrHelp
		}
		if len(args) == 0 || strings.HasPrefix(args[0], "-") {
			return request{}, usageError(cmd + ": missing a subcommand: " + map[string]string{
				"units": "create or list", "keys": "create, list or revoke", "outbox": "list, preview or retry"}[cmd])
		}
		if cmd == "outbox" {
			return parseOutbox(cmd+" "+args[0], args[1:], c)
		}
		return parseDirectory(cmd+" "+args[0], args[1:], c)
	case "get", "delete", "post", "patch", "put":
		names, err := parseArgs(adminFlags(c), args)
		if err != nil {
			return request{}, err
		}
		r := request{method: strings.ToUpper(cmd)}
		switch {
		case len(names) == 0:
			return r, usageError(cmd + ": missing PATH, e.g. /admin/v1/business-units")
		case len(names) == 1 && (cmd == "patch" || cmd == "put"):
			return r, usageError(cmd + ": missing the JSON body")
		case len(names) > 2 || (len(names) == 2 && (cmd == "get" || cmd == "delete")):
			return r, usageError(fmt.Sprintf("%s: unexpected argument %q", cmd, names[len(names)-1]))
		case len(names) == 2 && !json.Valid([]byte(names[1])):
			return r, usageError(cmd + ": the body is not JSON: " + names[1])
		case len(names) == 2:
			r.body = []byte(names[1])
		}
		r.path = names[0]
		return r, nil
	}
	return request{}, usageError(fmt.Sprintf("unknown command %q", cmd))
}

// parse parses the leading flags of *args and leaves the rest in it.
func parse(fs *flag.FlagSet, args *[]string) error {
	if err := fs.Parse(*args); errors.Is(err, flag.ErrHelp) {
		return err
	} else if err != nil {
		return usageError(err.Error())
	}
	*args = fs.Args()
	return nil
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// parseDirectory reads the units and keys commands.
func parseDirectory(cmd string, args []string, c *Client) (request, error) {
	fs := adminFlags(c)
	var name, unit, typ, expires, version, key string
	var origins multiFlag
	switch cmd {
	case "units create":
		fs.StringVar(&name, "name", "", "business unit name")
	case "keys create":
		fs.StringVar(&typ, "type", "secret", "secret or publishable")
		fs.StringVar(&name, "name", "", "key name")
		fs.StringVar(&expires, "expires-at", "", "expiry, RFC 3339")
		fs.StringVar(&version, "version", "", "pinned API version (default: current)")
		fs.Var(&origins, "origin", "allowed browser origin of a publishable key (repeatable)")
		fallthrough
	case "keys list":
		fs.StringVar(&unit, "unit", "", "business unit id")
	}
	names, err := parseArgs(fs, args)
	if err != nil {
		return request{}, err
	}
	const missingUnit = "-unit UNIT_ID (or the id as the first name; ticketd admin units list shows them)"
	units := "/admin/v1/business-units"
	switch cmd {
	case "units create":
		err = positional(cmd, names, &name, `NAME, e.g. ticketd admin units create "Acme Events"`)
		return send("POST", units, map[string]any{"name": name}, err)
	case "units list":
		if len(names) > 0 {
			return request{}, usageError(fmt.Sprintf("%s: unexpected argument %q", cmd, names[0]))
		}
		return request{method: "GET", path: units}, nil
	case "keys list":
		err = positional(cmd, names, &unit, missingUnit)
		return request{method: "GET", path: units + "/" + unit + "/api-keys"}, err
	case "keys revoke":
		err = positional(cmd, names, &key, "KEY_ID (GET /admin/v1/business-units/UNIT_ID/api-keys lists them)")
		return request{method: "POST", path: "/admin/v1/api-keys/" + key + "/revoke"}, err
	case "keys create":
		if err := positional(cmd, names, &unit, missingUnit); err != nil {
			return request{}, err
		}
		if typ != "secret" && typ != "publishable" {
			return request{}, usageError(fmt.Sprintf("%s: -type is secret or publishable, not %q", cmd, typ))
		}
		body := map[string]any{"type": typ}
		if name != "" {
			body["name"] = name
		}
		if len(origins) > 0 {
			body["origins"] = []string(origins)
		}
		if expires != "" {
			if _, err := time.Parse(time.RFC3339, expires); err != nil {
				return request{}, usageError(fmt.Sprintf("%s: -expires-at is not RFC 3339: %q", cmd, expires))
			}
			body["expiresAt"] = expires
		}
		if version != "" {
			body["version"] = version
		}
		return send("POST", units+"/"+unit+"/api-keys", body, nil)
	}
	return request{}, usageError(fmt.Sprintf("unknown command %q", cmd))
}

// send is the request carrying body as JSON, unless err.
func send(method, path string, body any, err error) (request, error) {
	if err != nil {
		return request{}, err
	}
	b, err := json.Marshal(body)
	return request{method, path, b}, err
}
