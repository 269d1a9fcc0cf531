// Package server puts the executor behind the network: the HTTP API of `airlock
// serve` (JSON under /v1, Server-Sent Events for log follows and runs), and the
// MCP tools of `airlock mcp` (stdio) and /mcp (streamable HTTP).
//
// Both faces are thin over one Service, the one door, which speaks no HTTP and
// owns what the executor does not know: tenants (bearer tokens, each bound to a
// tenant whose bounds become the executor's Caller; another tenant's job answers
// as an unknown id), admission (a tenant's concurrency limit, api.ErrBusy), the
// audit log (a JSON line per check, run start and finish, kill, refusal and auth
// failure; env values and tokens never appear), and the Prometheus metrics in a
// registry of its own. Errors become HTTP statuses by one table,
// api.ErrorKinds, through errorOf (errors.go).
//
// Files by job: http.go (routes, middleware, the server), origin.go (the
// no-token guard), decode.go (strict JSON bodies), routes.go (the handlers),
// logs.go and events.go (pages of output, Server-Sent Events), mcp.go (the
// tools), service.go, audit.go, metrics.go, config.go. The Service's mode is
// chosen once, in NewService: jobs.go (job operations: localJobs, or
// clusterJobs) and membership.go (noCluster, or clusterMember); the cluster's
// side of both is cluster/member (the node's membership) and cluster/place
// (the queue, claims, ends and reads across nodes), which the Service lends
// its tenants, audit and trackers (placeServer, in jobs.go); sealed.go (the
// tenant's key for cluster/seal), and peers.go (Peer: the calls to other
// nodes, implemented by cluster/peer).
//
// Data flows: request → same-origin guard → authenticate → decode → Service
// (the executor's gate, Admit, with the tenant's Caller; admission; audit of the
// admitted request) → Execute or Launch → Result → JSON. Background jobs started
// here are tracked until they end, to audit and count them; the jobs themselves
// belong to the data dir and outlive the server, which reconciles it every few
// minutes (see docs/DESIGN.md).
package server
