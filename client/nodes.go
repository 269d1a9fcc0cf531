package client

import (
	"context"
	"net/url"

	"github.com/airlock-sandbox/airlock/api"
)

// The cluster's routes: a server started without --database answers them
// with an *api.Error of code "not_a_cluster" (404).

// Nodes lists the nodes of the server's cluster, dead ones too, by id.
func (c *Client) Nodes(ctx context.Context) (api.NodeList, error) {
	var l api.NodeList
	err := c.call(ctx, "GET", "/v1/nodes", nil, nil, &l)
	return l, err
}

// Drain stops (drain true) or resumes (false) new placements on node id and
// returns the node as it is now. The server allows it to its admin tenants
// only (code "forbidden", 403, otherwise).
func (c *Client) Drain(ctx context.Context, id string, drain bool) (api.Node, error) {
	var n api.Node
	err := c.call(ctx, "POST", "/v1/nodes/"+url.PathEscape(id)+"/drain", nil, api.DrainRequest{Drain: &drain}, &n)
	return n, err
}
