// Package peer reaches another node of an airlock cluster through its HTTP
// API, on behalf of a tenant: it is the server's Peer (server.WithPeers), so
// that the server forwards work to the node holding a job or workspace
// without linking an HTTP client of its own.
package peer

import (
	"context"
	"io"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/client"
)

// Node is another node, called as one tenant.
type Node struct {
	*client.Client
}

// Dial returns the node whose API listens at address (host:port), called
// with the tenant's token ("" for a cluster without tokens).
func Dial(address, token string) (*Node, error) {
	c, err := client.New("http://"+address, token)
	if err != nil {
		return nil, err
	}
	return &Node{c}, nil
}

// Run has the node run spec in the foreground: begin gets the run's id once
// the node has admitted it, stdout and stderr its output as it is written.
func (n *Node) Run(ctx context.Context, spec api.Spec, stdout, stderr io.Writer, begin func(id string)) (api.Result, error) {
	var opts []client.RunOption
	if begin != nil {
		opts = append(opts, client.Opened(begin))
	}
	return n.Client.Run(ctx, spec, stdout, stderr, opts...)
}
