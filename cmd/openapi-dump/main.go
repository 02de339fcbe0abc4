// Command openapi-dump starts the service on a temporary data dir and a loopback
// port, fetches the three served OpenAPI documents and writes them to a
// directory, for linters (make lint-openapi) and generators that read
// files. It keeps nothing: the data dir is removed when it exits.
package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	nethttp "net/http"
	"os"
	"path/filepath"
	"time"

	"ticketd/app"
)

func main() {
	out := flag.String("out", "bin/openapi", "directory to write developer.json, storefront.json, admin.json and door.json to")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "dump:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	dir, err := os.MkdirTemp("", "ticketd-openapi-dump-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := app.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.DataDir = dir
	cfg.AdminToken = "adm_dump_token_0123456789"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	m := app.NewMain(cfg, io.Discard)
	if err := m.Open(); err != nil {
		return err
	}
	defer m.Close()
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	hc := &nethttp.Client{Timeout: 30 * time.Second}
	for name, path := range map[string]string{
		"developer.json": "/openapi.json", "storefront.json": "/storefront/openapi.json", "admin.json": "/admin/openapi.json", "door.json": "/door/openapi.json",
	} {
		resp, err := hc.Get(m.URL + path)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != 200 {
			return fmt.Errorf("GET %s: %d", path, resp.StatusCode)
		}
		if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
