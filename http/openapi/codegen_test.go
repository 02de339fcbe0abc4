package openapi_test

import (
	"context"
	"io"
	nethttp "net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
)

// oapiCodegen is the generator an integrator would run, pinned.
const oapiCodegen = "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2"

// TestGeneratedGoClientRoundTripsMoney generates a Go client with
// oapi-codegen from the served /openapi.json, with no hand edits, builds it
// in a module of its own and runs testdata/codegen/main.go.txt with it
// against the real service: an order of a 79.99 ticket reads back exactly
// 79.99 (money is a float64, never a float32). It fetches the generator
// and its runtime through the Go module proxy, so it is skipped by -short.
func TestGeneratedGoClientRoundTripsMoney(t *testing.T) {
	if testing.Short() {
		t.Skip("builds oapi-codegen through the module proxy")
	}
	goBin, err := exec.LookPath("go")
	require.NoError(t, err)
	svc := apptest.Start(t)
	unit := svc.NewUnit("codegen")

	resp, err := nethttp.Get(svc.URL + "/openapi.json")
	require.NoError(t, err)
	doc, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)

	dir := t.TempDir()
	prog, err := os.ReadFile(filepath.Join("testdata", "codegen", "main.go.txt"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "openapi.json"), doc, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), prog, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module clientcheck\n\ngo 1.24\n"), 0o644))

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, goBin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		require.NoErrorf(t, err, "go %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}
	run("run", oapiCodegen, "-generate", "types,client", "-package", "main", "-o", "client.gen.go", "openapi.json")
	run("mod", "tidy")
	run("vet", ".")
	out := run("run", ".", svc.URL, unit.Secret)
	require.Contains(t, out, "ok 79.99", "the generated client reads the amount back exactly")
}
