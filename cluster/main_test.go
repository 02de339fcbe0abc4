package cluster_test

import (
	"testing"

	"ticketd/cluster/clustertest"
)

func TestMain(m *testing.M) { clustertest.Main(m) }
