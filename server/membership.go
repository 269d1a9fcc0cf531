package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/cluster"
	"github.com/airlock-sandbox/airlock/cluster/place"
	"github.com/airlock-sandbox/airlock/executor"
)

// membership is what the Service asks of its cluster beyond jobs: the nodes,
// which node holds a workspace, readiness and upkeep. A server without a
// database is in none (noCluster); NewService chooses once, with jobs.
type membership interface {
	// ready reports whether the cluster's database answers and this node's
	// lease holds.
	ready(ctx context.Context) error
	nodes(ctx context.Context) (api.NodeList, error)
	// drain stops or resumes placements on node id, once allowed says yes.
	drain(ctx context.Context, id string, draining bool, allowed func() error) (api.Node, error)
	// run starts the node's own loops (claims, notices), once the jobs
	// already running here are tracked; stop ends them and waits for what
	// they started; close ends the membership.
	run()
	stop()
	close()
	// prune forgets the cluster's jobs that ended longer than age ago.
	prune(ctx context.Context, age time.Duration)
	// bindWorkspace records that this node holds a new workspace;
	// unbindWorkspace forgets a removed one.
	bindWorkspace(ctx context.Context, id, tenant string) error
	unbindWorkspace(ctx context.Context, id string)
	// holder is the node that holds workspace id when it is another node
	// (nil when it is this one, or unknown): its files are on that node's
	// engine (docs/cluster.md, "Jobs across nodes").
	holder(ctx context.Context, tenant, id string) (Peer, error)
	// otherWorkspaces are the tenant's workspaces on the other nodes.
	otherWorkspaces(ctx context.Context, tenant string) ([]executor.Workspace, error)
}

// noCluster is the membership of a server without a database.
type noCluster struct{}

func (noCluster) ready(context.Context) error { return nil }
func (noCluster) nodes(context.Context) (api.NodeList, error) {
	return api.NodeList{}, api.ErrNotACluster
}
func (noCluster) drain(context.Context, string, bool, func() error) (api.Node, error) {
	return api.Node{}, api.ErrNotACluster
}
func (noCluster) run()                                                {}
func (noCluster) stop()                                               {}
func (noCluster) close()                                              {}
func (noCluster) prune(context.Context, time.Duration)                {}
func (noCluster) bindWorkspace(context.Context, string, string) error { return nil }
func (noCluster) unbindWorkspace(context.Context, string)             {}
func (noCluster) holder(context.Context, string, string) (Peer, error) {
	return nil, nil
}
func (noCluster) otherWorkspaces(context.Context, string) ([]executor.Workspace, error) {
	return nil, nil
}

// clusterMember is the membership of a node of a cluster (cluster/member),
// whose loops are its placement's (cluster/place).
type clusterMember struct {
	s *Service
	p *place.Placer
}

func (m clusterMember) ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return m.s.node.Ready(ctx)
}

func (m clusterMember) nodes(ctx context.Context) (api.NodeList, error) { return m.s.node.Nodes(ctx) }

func (m clusterMember) drain(ctx context.Context, id string, draining bool, allowed func() error) (api.Node, error) {
	if err := allowed(); err != nil {
		return api.Node{}, err
	}
	return m.s.node.Drain(ctx, id, draining)
}

func (m clusterMember) run()   { m.p.Run() }
func (m clusterMember) stop()  { m.p.Stop() }
func (m clusterMember) close() { m.s.node.Close() }

func (m clusterMember) prune(ctx context.Context, age time.Duration) {
	pruned, err := m.s.node.Cluster().Prune(ctx, age)
	if err != nil && ctx.Err() == nil {
		m.s.log.Warn("prune the cluster's ended jobs", "err", m.s.node.Scrub(err))
	}
	if pruned > 0 {
		m.s.log.Info("pruned the cluster's ended jobs", "count", pruned)
	}
}

func (m clusterMember) bindWorkspace(ctx context.Context, id, tenant string) error {
	// Its jobs are placed on this node, which holds its files.
	err := m.s.node.Cluster().BindWorkspace(ctx, cluster.Workspace{ID: id, Tenant: tenant, Node: m.s.node.Self().ID})
	return m.s.node.Unavailable(err)
}

func (m clusterMember) unbindWorkspace(ctx context.Context, id string) {
	if err := m.s.node.Cluster().UnbindWorkspace(ctx, id); err != nil {
		m.s.log.Warn("forget a workspace in the cluster", "workspace", id, "err", m.s.node.Scrub(err))
	}
}

func (m clusterMember) holder(ctx context.Context, tenant, id string) (Peer, error) {
	n := m.s.node
	w, err := n.Cluster().WorkspaceOf(ctx, id)
	switch {
	case errors.Is(err, cluster.ErrNotFound), err == nil && w.Node == n.Self().ID:
		return nil, nil // this node's, or unknown: this node's engine answers
	case err != nil:
		return nil, n.Unavailable(err)
	case tenant != Anonymous && w.Tenant != tenant:
		return nil, nil // another tenant's: this node answers it as unknown
	}
	return m.s.peer(ctx, w.Node, tenant)
}

func (m clusterMember) otherWorkspaces(ctx context.Context, tenant string) ([]executor.Workspace, error) {
	n := m.s.node
	nodes, err := n.Cluster().WorkspaceNodes(ctx, tenant)
	if err != nil {
		return nil, n.Unavailable(err)
	}
	var list []executor.Workspace
	for _, id := range nodes {
		if id == n.Self().ID {
			continue
		}
		peer, err := m.s.peer(ctx, id, tenant)
		if err != nil {
			return nil, err
		}
		theirs, err := peer.Workspaces(ctx)
		if err != nil {
			return nil, fmt.Errorf("workspaces on node %s: %w", id, err)
		}
		list = append(list, theirs...)
	}
	return list, nil
}
