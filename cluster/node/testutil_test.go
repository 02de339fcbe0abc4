package node

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"ticketd/internal/testlock"
)

// parallelTests is clustertest.ParallelTests (which this package's tests
// cannot import: it imports the package).
const parallelTests = 6

func TestMain(m *testing.M) {
	if cfg := os.Getenv(childNodeEnv); cfg != "" {
		runChildNode(cfg) // never returns: see startChildNode
	}
	// The cluster packages' tests take turns (see package testlock).
	release, err := testlock.Exclusive("cluster")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		release = func() {}
	}
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", fmt.Sprint(parallelTests))
	}
	code := m.Run()
	release()
	os.Exit(code)
}
