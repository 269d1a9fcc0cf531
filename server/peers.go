package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/airlock-sandbox/airlock/api"
)

// Peer is another node of the cluster as this node calls it on behalf of a
// tenant: the operations only the node holding a job or workspace can serve,
// which this node forwards. cluster/peer implements it over the node's HTTP
// API; the server links no HTTP client.
type Peer interface {
	Get(ctx context.Context, id string) (api.Result, error)
	Logs(ctx context.Context, id string, opts api.LogsOptions) (api.Logs, error)
	// Run runs spec in the foreground there; begin gets the run's id once
	// admitted.
	Run(ctx context.Context, spec api.Spec, stdout, stderr io.Writer, begin func(id string)) (api.Result, error)
	Workspace(ctx context.Context, id string) (api.Workspace, error)
	Workspaces(ctx context.Context) ([]api.Workspace, error)
	RemoveWorkspace(ctx context.Context, id string) error
	PutFile(ctx context.Context, id, p string, mode fs.FileMode, content io.Reader) error
	PutArchive(ctx context.Context, id, dir string, archive io.Reader) error
	OpenFile(ctx context.Context, id, p string) (io.ReadCloser, api.FileInfo, error)
	OpenArchive(ctx context.Context, id, dir string) (io.ReadCloser, error)
	ListFiles(ctx context.Context, id, dir string) (api.FileList, error)
	RemoveFile(ctx context.Context, id, p string) error
}

// Option configures a Service beyond its Config.
type Option func(*Service)

// WithPeers gives a Service in cluster mode its way to reach the other
// nodes: dial returns the node whose API listens at address, called with a
// tenant's token (cluster/peer.Dial).
func WithPeers[P Peer](dial func(address, token string) (P, error)) Option {
	return func(s *Service) {
		s.dial = func(address, token string) (Peer, error) {
			p, err := dial(address, token)
			if err != nil {
				return nil, err
			}
			return p, nil
		}
	}
}

// peer is node id's API, called as the tenant: with the tenant's token from
// this node's configuration, which every node of a cluster shares
// (docs/cluster.md, "Jobs across nodes").
func (s *Service) peer(ctx context.Context, id, tenant string) (Peer, error) {
	nodes, err := s.node.Cluster().Nodes(ctx)
	if err != nil {
		return nil, s.node.Unavailable(err)
	}
	token := ""
	for _, t := range s.cfg.Tokens {
		if t.Tenant == tenant {
			token = t.Token
			break
		}
	}
	for _, n := range nodes {
		if n.ID == id && n.Live {
			return s.dial(n.Address, token)
		}
	}
	return nil, fmt.Errorf("%w: node %s is not live", api.ErrOnAnotherNode, id)
}

// isTransport tells whether err is a failure to reach a peer rather than its
// answer.
func isTransport(err error) bool {
	var e *api.Error
	return !errors.As(err, &e)
}
