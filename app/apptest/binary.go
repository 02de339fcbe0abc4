package apptest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RunWithBinary builds the ticketd binary into a temporary directory,
// stores its path in *binary, runs the package's tests and exits with
// their code: the TestMain of the suites that drive the real process
// (kill -9, SIGTERM, file descriptor limits, storage faults).
func RunWithBinary(m *testing.M, binary *string) {
	dir, err := os.MkdirTemp("", "ticketd-bin")
	if err != nil {
		fmt.Fprintf(os.Stderr, "apptest: temp dir: %v\n", err)
		os.Exit(1)
	}
	*binary = filepath.Join(dir, "ticketd")
	out, err := exec.Command("go", "build", "-o", *binary, "ticketd/cmd/ticketd").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "apptest: build ticketd: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
