package api

import (
	"context"
	"errors"

	"ticketd/event"
	thttp "ticketd/http"
)

// The console's view of cluster mode: the nodes and where an event lives.

// Cluster is what the cluster routes read (Deps.Cluster); nil on a single
// node, which then lists itself as the one node and owner.
type Cluster interface {
	Nodes() []ClusterNode
	Owner(ctx context.Context, eventID string) (string, error)
}

// ClusterNode is one node of the cluster.
type ClusterNode struct {
	Name  string `json:"name"`
	Ready bool   `json:"ready"`
}

// ClusterStatus is the answer of GET /admin/v1/cluster.
type ClusterStatus struct {
	Nodes []ClusterNode `json:"nodes"`
}

// EventOwner is the answer of GET /admin/v1/events/{eventId}/owner.
type EventOwner struct {
	Node string `json:"node"`
}

// singleNode names the node of a service that runs without a cluster.
const singleNode = "local"

func (a *api) clusterRoutes() []thttp.Route {
	adm := func(r thttp.Route) thttp.Route { r.Surface = thttp.Admin; return r }
	return []thttp.Route{
		adm(thttp.Route{Method: "GET", Path: "/admin/v1/cluster", OperationID: "getCluster", Tag: "Cluster",
			Summary: "List the nodes of the cluster and whether each can serve writes", Success: 200,
			Response: ClusterStatus{}, Handle: a.getCluster}),
		adm(thttp.Route{Method: "GET", Path: "/admin/v1/events/{eventId}/owner", OperationID: "getEventOwner", Tag: "Cluster",
			Summary: "Name the node that handles an event's requests", Success: 200, Response: EventOwner{},
			Errors: []int{404, 503}, Handle: a.getEventOwner}),
	}
}

func (a *api) getCluster(c *thttp.Ctx) (any, error) {
	if a.deps.Cluster == nil {
		return ClusterStatus{Nodes: []ClusterNode{{Name: singleNode, Ready: a.ops.Ready() == nil}}}, nil
	}
	return ClusterStatus{Nodes: a.deps.Cluster.Nodes()}, nil
}

func (a *api) getEventOwner(c *thttp.Ctx) (any, error) {
	id := c.Param("eventId")
	if a.deps.Cluster == nil {
		if _, ok := a.ops.EventUnit(id); !ok {
			return nil, event.Errorf(event.NotFound, "event not found")
		}
		return EventOwner{Node: singleNode}, nil
	}
	// In cluster mode the owner is the leader of the event's shard, for an
	// event that has a log there.
	owner, err := a.deps.Cluster.Owner(c.RequestCtx(), id)
	if ee := (*event.Error)(nil); errors.As(err, &ee) {
		return nil, ee // an event that does not exist
	}
	if err != nil || owner == "" {
		return nil, &thttp.Error{Status: 503, Reason: "CLUSTER_NOT_READY", Message: "the event's shard has no leader yet; retry shortly"}
	}
	return EventOwner{Node: owner}, nil
}
