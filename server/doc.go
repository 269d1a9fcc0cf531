// Package server puts the executor behind the network: the HTTP API of `airlock
// serve` (JSON under /v1, Server-Sent Events for log follows), and the MCP tools
// of `airlock mcp` (stdio) and /mcp (streamable HTTP).
//
// Both faces are thin over one Service, which owns what the executor does not
// know: tenants (bearer tokens, each bound to a tenant with its own ceilings,
// concurrency limit and policy; another tenant's job answers as an unknown id),
// the audit log (a JSON line per check, run start and finish, kill, refusal and
// auth failure; env values and tokens never appear), and the Prometheus metrics
// in a registry of its own. Errors become HTTP statuses in one place, errorOf.
//
// Data flows: request → authenticate → decode (size-limited, unknown fields
// refused) → Service (tenant ceilings, admission, audit) → executor → Result →
// JSON. Background jobs started here are tracked until they end, to audit and
// count them; the jobs themselves belong to the data dir and outlive the server.
package server
