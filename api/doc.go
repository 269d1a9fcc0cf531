// Package api holds what crosses the wire between airlock's server and its
// clients, and nothing that runs anything: a client of the HTTP API imports it
// without linking the Docker SDK, Prometheus or the MCP SDK.
package api
