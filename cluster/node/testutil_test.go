package node

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// parallelTests is how many of the package's parallel tests run at once
// unless -parallel is given. The tests marked t.Parallel each start their
// own nodes and spend most of their time waiting (elections, the leaders'
// spreading, heartbeats, timers), not computing: five of the three-node app
// tests took 147 s one after another and 36 s together, with the CPU mostly
// idle. Tests that measure a pause or a failover's gap stay sequential, and
// Go runs those alone, before the parallel ones.
const parallelTests = 6

func TestMain(m *testing.M) {
	if cfg := os.Getenv(childNodeEnv); cfg != "" {
		runChildNode(cfg) // never returns: see startChildNode
	}
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", fmt.Sprint(parallelTests))
	}
	os.Exit(m.Run())
}
