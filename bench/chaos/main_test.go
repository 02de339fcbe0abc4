package chaos

import (
	"fmt"
	"os"
	"testing"

	"ticketd/bench/load"
)

// TestMain lets the test binary serve as the supervisor's child processes
// (the ceiling server).
func TestMain(m *testing.M) {
	if role := os.Getenv(load.RoleEnv); role != "" {
		if err := load.RunRole(role, os.Args[1:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
