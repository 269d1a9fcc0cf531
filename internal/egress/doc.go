// Package egress is the proxy through which a sandbox reaches the hosts its run
// names, and nothing else.
//
// A run asks for hosts with patterns ("pypi.org", "*.pythonhosted.org",
// "github.com:443"). ParseRules reads them into Rules; Bounds holds what the
// operator allows (egress.allowed, egress.default, egress.allow_cidrs), Narrow
// fits a tenant's bounds inside the server's, and Admit checks a request's
// patterns against them, so that a pattern outside is refused before the run
// starts, naming the host and the bound.
//
// At run time a Session is the run's proxy. Whatever carries the sandbox's
// connections out hands each one to Session.Serve as a net.Conn, and Serve
// speaks HTTP/1.1 proxy on it:
//
//   - CONNECT host:port opens a tunnel, for TLS; nothing is decrypted (but
//     for a host of the run's secrets, below);
//   - an absolute-URI request (GET http://host/path, what apt sends) is
//     forwarded, several on one kept-alive connection, each host vetted;
//   - anything else (an origin-form request, an https:// URI, a Host header
//     that names another host than the URI) is a 400 that says why.
//
// Vetting a host, in order: an IP literal is reached only when
// Policy.AllowCIDRs covers it, on ports 80 and 443; a name must match one of
// the run's Rules on the port asked for; the proxy looks the name up itself
// and drops every address the address rules refuse (loopback, private,
// link-local and the metadata address, CGNAT, multicast, reserved, IPv6
// unique-local and link-local, IPv6 that embeds an IPv4 address, the host's
// own addresses), unless AllowCIDRs covers it; then it dials one of the
// addresses it kept. It never looks the name up twice, so a name that answers
// a public address to the check and a private one to the dial (DNS rebinding)
// reaches nothing private. A refused host is a 403 whose body names it and
// says why; an origin that cannot be reached is a 502; a cap is a 429.
//
// The session bounds the run: client connections open at once (MaxConns,
// idle ones included, so a flood of them holds nothing), bytes
// each way over the whole run (MaxBytesIn, MaxBytesOut, exact even when
// connections race), and how long a client connection lives (MaxLifetime).
// Session.Close, or the end of the context NewSession was given, closes every
// connection at once. Every head the proxy reads, from a client, an origin
// or an upstream proxy, is read within a 64 KiB buffer (waitHead), so no
// peer grows its memory. Session.Report lists each host and port asked for:
// allowed or denied, why, connections, and bytes each way, for the run's
// Result; at most MaxEntries of them, then one entry (OthersHost) for the
// rest. Refusal and cut log lines are rate-limited per session.
//
// A run's secrets (Policy.Secrets, secret.go) change one thing: a CONNECT to
// a host a secret is bound to is intercepted (intercept.go). The proxy opens
// its own verified TLS to the origin, terminates the client's with a leaf
// from Policy.Authority for the CONNECT's name, and puts the secret into
// each request: the placeholder the sandbox holds is replaced by the value,
// or a configured header is set. Every byte of such a host's answers
// passes the scrubber (status line, 1xx and final headers, body, trailers),
// or the answer is refused (an encoded body). Every other host stays a
// tunnel; plain HTTP never carries a value; the report names the secrets applied per host,
// never a value.
//
// The package uses the standard library alone. It knows nothing of sandboxes
// or of the API.
package egress
