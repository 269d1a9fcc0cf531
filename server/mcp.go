package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/junit"
)

// The MCP tools mirror the HTTP routes, with the same field names: an agent that
// reads the API documentation can use either.

// The closed sets of the tools' inputs, as enums in their schemas.
var (
	stateEnum    = enumOf(api.States)
	streamEnum   = []any{"stdout", "stderr", "both"}
	encodingEnum = []any{"utf8", "base64"}
	signalEnum   = []any{"SIGTERM", "SIGKILL", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGSTOP", "SIGCONT"}
)

// enumOf is values as a schema's enum.
func enumOf[T any](values []T) []any {
	e := make([]any, len(values))
	for i, v := range values {
		e[i] = v
	}
	return e
}

// inputSchema is T's schema, with enums for the properties named.
func inputSchema[T any](enums map[string][]any) *jsonschema.Schema {
	sch, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("schema of %T: %v", *new(T), err))
	}
	for name, values := range enums {
		sch.Properties[name].Enum = values
	}
	return sch
}

// Tool annotations: what a tool does to the world, for a client that asks
// before it lets an agent act.
var (
	no          = false
	readOnly    = &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no}
	sandboxed   = &mcp.ToolAnnotations{DestructiveHint: &no, OpenWorldHint: &no}
	destructive = &mcp.ToolAnnotations{OpenWorldHint: &no, IdempotentHint: true}
)

// MCPServer returns an MCP server whose tools act for tenant. via names the
// transport in the audit log.
func (s *Service) MCPServer(tenant, version string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "airlock", Version: version}, &mcp.ServerOptions{
		Instructions: "airlock runs shell commands in throw-away, locked-down containers (no network, read-only root, " +
			"memory/CPU/pids limits) after a policy check. Use run for commands that finish within a minute or so; " +
			"start + monitor/logs/wait + kill for long ones. Results say why a command was refused, " +
			"that it timed out (exit 124) or ran out of memory (oom_killed).",
		Logger: s.log,
	})
	const via = "mcp"
	mcp.AddTool(srv, &mcp.Tool{Name: "run", Description: "Run a command in a fresh sandbox and return its result: " +
		"exit_code, stdout and stderr apart, duration, timed_out, oom_killed, blocked with block_reason. " +
		"Give command (a shell command) or argv. timeout is in seconds (default 60).", Annotations: sandboxed},
		func(ctx context.Context, req *mcp.CallToolRequest, spec executor.Spec) (*mcp.CallToolResult, executor.Result, error) {
			if spec.Background {
				return nil, executor.Result{}, errors.New("background: run waits for the command; use the start tool for a background process")
			}
			res, err := s.Run(ctx, tenant, spec, via, remoteOf(req), RunFollower{})
			if err != nil {
				return nil, res, toolError(err)
			}
			return text(summarize(res)), res, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "start", Description: "Start a command as a background process and return its id at once. " +
		"It has no timeout unless given (seconds, at most 24 h). Follow it with monitor, logs, wait and kill.", Annotations: sandboxed},
		func(ctx context.Context, req *mcp.CallToolRequest, spec executor.Spec) (*mcp.CallToolResult, executor.Process, error) {
			p, err := s.Start(ctx, tenant, spec, via, remoteOf(req))
			if err != nil {
				return nil, p, toolError(err)
			}
			msg := fmt.Sprintf("started process %s", p.ID)
			if p.State == executor.StateBlocked {
				msg = fmt.Sprintf("blocked by policy [%s]: %s; nothing was started", p.BlockRule, p.BlockReason)
			}
			return text(msg), p, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "monitor", Description: "Report a background process: state, exit code once ended, " +
		"runtime so far, resource usage, and its output so far (stdout/stderr up to max_output, and the tails).",
		Annotations: readOnly},
		func(ctx context.Context, _ *mcp.CallToolRequest, in api.IDRequest) (*mcp.CallToolResult, executor.Result, error) {
			res, err := s.Get(ctx, tenant, in.ID)
			if err != nil {
				return nil, res, toolError(err)
			}
			return text(summarize(res)), res, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "logs", Description: "Read a background process's output from a byte offset: " +
		"stream stdout, stderr or both; stdout_next/stderr_next are the offsets of the next page.",
		InputSchema: inputSchema[api.LogsRequest](map[string][]any{"stream": streamEnum, "encoding": encodingEnum}), Annotations: readOnly},
		func(ctx context.Context, _ *mcp.CallToolRequest, in api.LogsRequest) (*mcp.CallToolResult, api.LogsResponse, error) {
			page, err := s.logsPage(ctx, tenant, in)
			if err != nil {
				return nil, page, toolError(err)
			}
			msg := fmt.Sprintf("process %s (%s): stdout %d bytes kept, stderr %d", page.ID, page.State, page.StdoutSize, page.StderrSize)
			if page.Stdout != nil {
				msg += fmt.Sprintf("; stdout_next %d", page.StdoutNext)
			}
			if page.Stderr != nil {
				msg += fmt.Sprintf("; stderr_next %d", page.StderrNext)
			}
			for _, p := range []struct {
				name string
				data *string
			}{{"stdout", page.Stdout}, {"stderr", page.Stderr}} {
				if p.data != nil && *p.data != "" {
					msg += "\n" + p.name + ":\n" + strings.TrimSuffix(*p.data, "\n")
				}
			}
			return text(msg), page, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "kill", Description: "End a background process: send signal (default SIGTERM) to every " +
		"process in its sandbox, then SIGKILL after force_after seconds (default 10, 0 = never). Killing a process " +
		"that already ended is not an error.",
		InputSchema: inputSchema[api.KillToolRequest](map[string][]any{"signal": signalEnum}), Annotations: destructive},
		func(ctx context.Context, req *mcp.CallToolRequest, in api.KillToolRequest) (*mcp.CallToolResult, executor.KillResult, error) {
			k, err := s.Kill(ctx, tenant, in.ID, in.Signal, in.ForceAfterDuration(), via, remoteOf(req))
			if err != nil {
				return nil, k, toolError(err)
			}
			return text(k.Message), k, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "wait", Description: "Wait until a background process ends, at most timeout " +
		"seconds (default 30, at most 3600), and return its result; state running if it still runs.",
		Annotations: readOnly},
		func(ctx context.Context, _ *mcp.CallToolRequest, in api.WaitToolRequest) (*mcp.CallToolResult, executor.Result, error) {
			d, err := api.WaitRequest{Timeout: in.Timeout}.Duration()
			if err != nil {
				return nil, executor.Result{}, toolError(err)
			}
			res, err := s.Wait(ctx, tenant, in.ID, d)
			if err != nil {
				return nil, res, toolError(err)
			}
			return text(summarize(res)), res, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "list", Description: "List background processes, most recent first, with total; " +
		"filter by state and labels.",
		InputSchema: inputSchema[api.ListRequest](map[string][]any{"state": stateEnum}), Annotations: readOnly},
		func(ctx context.Context, _ *mcp.CallToolRequest, in api.ListRequest) (*mcp.CallToolResult, executor.ProcessList, error) {
			list, err := s.List(ctx, tenant, executor.ListOptions{State: in.State, Labels: in.Labels, Limit: in.Limit})
			if err != nil {
				return nil, list, toolError(err)
			}
			var b strings.Builder
			if list.Total == 1 {
				b.WriteString("1 process matches")
			} else {
				fmt.Fprintf(&b, "%d processes match", list.Total)
			}
			for _, p := range list.Processes {
				cmd := p.Command
				if cmd == "" {
					cmd = strings.Join(p.Argv, " ")
				}
				fmt.Fprintf(&b, "\n%s %s %q", p.ID, p.State, truncate(cmd, 80))
			}
			return text(b.String()), list, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "check", Description: "Judge a command with the policy without running it: " +
		"blocked, with the rule and the reason.", Annotations: readOnly},
		func(ctx context.Context, req *mcp.CallToolRequest, in api.CheckRequest) (*mcp.CallToolResult, api.CheckResult, error) {
			d, err := s.Check(ctx, tenant, in, via, remoteOf(req))
			if err != nil {
				return nil, api.CheckResult{}, toolError(err)
			}
			msg := "allowed"
			if !d.Allowed {
				msg = fmt.Sprintf("blocked [%s]: %s", d.Rule, d.Reason)
				if d.Match != "" {
					msg += ": " + d.Match
				}
			}
			return text(msg), d, nil
		})
	s.addWorkspaceTools(srv, tenant)
	return srv
}

// mcpHandler serves /mcp: one MCP server per tenant, chosen by the request's
// token, in both eras of the protocol (docs/server.md, MCP):
//
//   - The stateless protocol (2026-07-28 and later) has no session: every
//     request names its version in the Mcp-Protocol-Version header and carries
//     its own token, so each call acts for the tenant of its own token.
//   - The session-based versions (up to 2025-11-25) open a session with
//     initialize. Each session is bound to the tenant that opened it: the SDK
//     compares the user of every later request of a session with the
//     session's (see mcpSessionGuard), so another tenant's token on it is
//     refused (403, audited).
//
// The SDK serves the stateless protocol only from a handler without sessions,
// so a request goes to one of two handlers by the version it names.
func (s *Service) mcpHandler() http.Handler {
	var mu sync.Mutex
	servers := map[string]*mcp.Server{}
	serverOf := func(r *http.Request) *mcp.Server {
		tenant, _ := r.Context().Value(tenantKey{}).(string)
		mu.Lock()
		defer mu.Unlock()
		if srv, ok := servers[tenant]; ok {
			return srv
		}
		srv := s.MCPServer(tenant, s.version)
		servers[tenant] = srv
		return srv
	}
	// A stateless request is the whole call: when its client goes, so does the
	// call, as with the HTTP API's runs.
	stateless := mcp.NewStreamableHTTPHandler(serverOf, &mcp.StreamableHTTPOptions{
		Logger: s.log, Stateless: true, PropagateRequestCancellation: true})
	sdk := mcp.NewStreamableHTTPHandler(serverOf, &mcp.StreamableHTTPOptions{Logger: s.log, SessionTimeout: 30 * time.Minute})
	var sessions http.Handler = sdk
	if len(s.cfg.Tokens) > 0 {
		// The SDK binds a session to the user of the request that opened it when
		// the request carries its TokenInfo, which only its bearer middleware
		// sets. The token is already checked (authenticated): the user is the
		// tenant it maps to.
		sessions = auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
			tenant, _ := ctx.Value(tenantKey{}).(string)
			return &auth.TokenInfo{UserID: "tenant:" + tenant}, nil
		}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(sdk)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The client's address travels to the tools (for the audit log) in a
		// header no client may set.
		r.Header.Set(remoteHeader, r.RemoteAddr)
		if statelessVersion(r.Header.Get("Mcp-Protocol-Version")) {
			stateless.ServeHTTP(w, r)
			return
		}
		if r.Header.Get("Mcp-Session-Id") == "" {
			sessions.ServeHTTP(w, r)
			return
		}
		sessions.ServeHTTP(&mcpSessionGuard{ResponseWriter: w, refuse: func() {
			s.authFailed("", "mcp", r.RemoteAddr, "mcp session belongs to another tenant")
			writeJSON(w, http.StatusForbidden, errorBody{api.NewError("forbidden", "", "this MCP session belongs to another tenant: open a session of your own")})
		}}, r)
	})
}

// statelessVersion says whether an Mcp-Protocol-Version header names the
// stateless protocol: 2026-07-28 or later (versions are dates). Such a request
// must name its version in that header as well as in its body; one that names
// a version no one knows goes there too, to be told which are served.
func statelessVersion(v string) bool { return v >= "2026-07-28" }

// remoteHeader carries the client's address from the /mcp handler to the tools.
const remoteHeader = "X-Airlock-Remote-Addr"

// remoteOf is the client's address of a tool call: over HTTP the request's,
// over stdio "stdio".
func remoteOf(req *mcp.CallToolRequest) string {
	if req != nil && req.Extra != nil && req.Extra.Header != nil {
		if a := req.Extra.Header.Get(remoteHeader); a != "" {
			return a
		}
	}
	return "stdio"
}

// mcpSessionGuard turns the SDK's refusal of a session to another user (a
// plain 403) into the API's error shape, and audits it.
type mcpSessionGuard struct {
	http.ResponseWriter
	refuse  func()
	refused bool
}

func (g *mcpSessionGuard) WriteHeader(code int) {
	if code == http.StatusForbidden && !g.refused {
		g.refused = true
		g.ResponseWriter.Header().Del("Content-Type")
		g.ResponseWriter.Header().Del("X-Content-Type-Options")
		g.refuse()
		return
	}
	if !g.refused {
		g.ResponseWriter.WriteHeader(code)
	}
}

func (g *mcpSessionGuard) Write(b []byte) (int, error) {
	if g.refused {
		return len(b), nil // the SDK's own text; the refusal is written
	}
	return g.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush and the deadlines.
func (g *mcpSessionGuard) Unwrap() http.ResponseWriter { return g.ResponseWriter }

func text(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// toolError is err as an agent reads it: the field at fault first.
func toolError(err error) error {
	if e, ok := err.(*api.Error); ok && e.Field != "" && !strings.HasPrefix(e.Message, e.Field) {
		return fmt.Errorf("%s: %s", e.Field, e.Message)
	}
	return err
}

// summarize says in a few lines what a Result means, for an LLM to read.
func summarize(r executor.Result) string {
	var b strings.Builder
	if r.State == executor.StateRunning {
		b.WriteString("process " + r.ID + " ")
	}
	b.WriteString(r.Outcome())
	if r.Tests != nil {
		b.WriteString("\n" + junit.Text(*r.Tests))
	}
	// One line an agent can act on: the hosts to ask for, not guess.
	var denied []string
	for _, en := range r.Egress {
		if en.Decision == "denied" {
			denied = append(denied, fmt.Sprintf("%s:%d (%s)", en.Host, en.Port, en.Reason))
		}
	}
	if len(denied) > 0 {
		b.WriteString("\negress denied: " + strings.Join(denied, "; ") + "; name a host in egress to reach it")
	}
	for _, s := range []struct {
		name, tail string
		bytes      int64
		truncated  bool
	}{{"stdout", r.StdoutTail, r.StdoutBytes, r.StdoutTruncated}, {"stderr", r.StderrTail, r.StderrBytes, r.StderrTruncated}} {
		if s.bytes == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s (%d bytes", s.name, s.bytes)
		if s.truncated {
			b.WriteString(", truncated in the result")
		}
		fmt.Fprintf(&b, "), last lines:\n%s", strings.TrimSuffix(lastBytes(s.tail, 4000), "\n"))
	}
	return b.String()
}

// lastBytes keeps the end of s: the last lines are the ones that explain a failure.
func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + strings.ToValidUTF8(s[len(s)-n:], "")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
