package settle

import (
	"context"
	"testing"

	"ticketd/cluster/clustertest"
)

var bg = context.Background()

func TestMain(m *testing.M) { clustertest.Main(m) }
