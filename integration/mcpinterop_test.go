package integration

import (
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/executor"
)

// An MCP client we did not write, mark3labs/mcp-go, against a real `airlock
// serve` over HTTP and `airlock mcp` over stdio: with its default options (it
// speaks the stateless protocol, 2026-07-28), and pinned to the session-based
// protocol (2025-11-25), as the clients that predate 2026-07-28 speak it.

// TestMCPInteropHTTP: the client with its defaults goes stateless (no
// session: every request carries its own token), and every call acts for
// that token's tenant: another tenant's client sees none of its jobs.
func TestMCPInteropHTTP(t *testing.T) {
	addr, dataDir := freePort(t), t.TempDir()
	s := startServe(t, addr, dataDir, "AIRLOCK_TOKENS=tok-a:alpha,tok-b:beta")
	c := mcpHTTPClient(t, s.url, "tok-a")
	job := exerciseMCPClient(t, c, "")
	if v := c.ProtocolVersion(); v != mcp.ProtocolVersion20260728 {
		t.Fatalf("the client with its defaults speaks %q, want %s", v, mcp.ProtocolVersion20260728)
	}
	if session := c.GetTransport().(*transport.StreamableHTTP).GetSessionId(); session != "" {
		t.Fatalf("a stateless client holds session %q", session)
	}

	other := mcpHTTPClient(t, s.url, "tok-b")
	initializeMCP(t, other, "")
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "monitor", map[string]any{"id": job}
	if res, err := other.CallTool(t.Context(), req); err != nil || !res.IsError || !strings.Contains(res.Content[0].(mcp.TextContent).Text, "no such process") {
		t.Fatalf("beta monitors alpha's job: %v %+v", err, res)
	}
}

// TestMCPInteropHTTPSession: the session-based protocol; another tenant's
// token on the client's session is refused.
func TestMCPInteropHTTPSession(t *testing.T) {
	addr, dataDir := freePort(t), t.TempDir()
	s := startServe(t, addr, dataDir, "AIRLOCK_TOKENS=tok-a:alpha,tok-b:beta")
	c := mcpHTTPClient(t, s.url, "tok-a")
	exerciseMCPClient(t, c, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	if v := c.ProtocolVersion(); v != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
		t.Fatalf("the client speaks %q, want %s", v, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	}

	session := c.GetTransport().(*transport.StreamableHTTP).GetSessionId()
	if session == "" {
		t.Fatal("the client holds no session")
	}
	req, _ := http.NewRequestWithContext(t.Context(), "POST", s.url+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"list","arguments":{}}}`))
	req.Header.Set("Authorization", "Bearer tok-b")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", c.ProtocolVersion())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), `"forbidden"`) {
		t.Fatalf("beta on alpha's session: %d %s", resp.StatusCode, body)
	}
	audit, _ := os.ReadFile(filepath.Join(dataDir, "audit.log"))
	if !strings.Contains(string(audit), "mcp session belongs to another tenant") {
		t.Fatal("the refused session is not in the audit log")
	}
}

// TestMCPInteropStdio: the same client over `airlock mcp`, with its defaults
// and with the session-based protocol.
func TestMCPInteropStdio(t *testing.T) {
	for _, version := range []string{"", mcp.LATEST_LEGACY_PROTOCOL_VERSION} {
		env := append(os.Environ(), "AIRLOCK_DATA="+t.TempDir())
		c, err := mcpgo.NewStdioMCPClient(airlockCLI(t), env, "mcp")
		if err != nil {
			t.Fatal(err)
		}
		exerciseMCPClient(t, c, version)
		want := cmp.Or(version, mcp.ProtocolVersion20260728)
		if v := c.ProtocolVersion(); v != want {
			t.Fatalf("the client asked for %q speaks %q, want %s", version, v, want)
		}
		c.Close()
	}
}

// mcpHTTPClient is mcp-go's client of /mcp with token, closed at the end of t.
func mcpHTTPClient(t *testing.T, url, token string) *mcpgo.Client {
	t.Helper()
	c, err := mcpgo.NewStreamableHttpClient(url+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// initializeMCP starts c and connects it at version ("" for the client's
// default).
func initializeMCP(t *testing.T, c *mcpgo.Client, version string) {
	t.Helper()
	ctx := t.Context()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = version
	init.Params.ClientInfo = mcp.Implementation{Name: "mcp-go", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize at %q: %v", version, err)
	}
}

// exerciseMCPClient connects c at version and uses the tools: run, a
// background job through start, wait and logs, check, and a workspace's
// files read by a run. It returns the background job's id.
func exerciseMCPClient(t *testing.T, c *mcpgo.Client, version string) string {
	t.Helper()
	ctx := t.Context()
	initializeMCP(t, c, version)
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if strings.Join(names, " ") != "check create_workspace delete_workspace kill list list_files logs monitor read_file run start wait write_file" {
		t.Fatalf("tools %v", names)
	}
	callTool := func(name string, args map[string]any, out any) string {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		res, err := c.CallTool(ctx, req)
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		data, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s: %s: %v", name, data, err)
		}
		return res.Content[0].(mcp.TextContent).Text
	}
	var r executor.Result
	if text := callTool("run", map[string]any{"command": "echo hi; exit 3"}, &r); r.Stdout != "hi\n" || r.ExitCode != 3 || !strings.Contains(text, "exit code 3") {
		t.Fatalf("run: %+v %q", r, text)
	}
	var p executor.Process
	callTool("start", map[string]any{"command": "echo job; echo err >&2"}, &p)
	if callTool("wait", map[string]any{"id": p.ID, "timeout": 30}, &r); r.State != executor.StateCompleted {
		t.Fatalf("wait: %+v", r)
	}
	var page struct {
		Stdout     string `json:"stdout"`
		StdoutNext int64  `json:"stdout_next"`
	}
	if callTool("logs", map[string]any{"id": p.ID, "stream": "stdout"}, &page); page.Stdout != "job\n" || page.StdoutNext != 4 {
		t.Fatalf("logs: %+v", page)
	}
	var d struct{ Blocked bool }
	if text := callTool("check", map[string]any{"command": "mkfs.ext4 /dev/sda"}, &d); !d.Blocked || !strings.Contains(text, "blocked") {
		t.Fatalf("check: %+v %s", d, text)
	}

	// A workspace: a file written through the tool is the run's, and what the
	// run writes is read back through the tools.
	var ws api.Workspace
	callTool("create_workspace", map[string]any{"size": 8 << 20}, &ws)
	if !strings.HasPrefix(ws.ID, "ws_") || ws.Size != 8<<20 {
		t.Fatalf("create_workspace: %+v", ws)
	}
	var wrote api.WriteFileResult
	if callTool("write_file", map[string]any{"workspace": ws.ID, "path": "src/in.txt", "content": "from mcp-go\n"}, &wrote); wrote.Bytes != 12 {
		t.Fatalf("write_file: %+v", wrote)
	}
	if callTool("run", map[string]any{"command": "tr a-z A-Z < src/in.txt > out.txt && cat src/in.txt", "workspace": ws.ID}, &r); r.ExitCode != 0 || r.Stdout != "from mcp-go\n" {
		t.Fatalf("run in the workspace: %+v", r)
	}
	var read api.ReadFileResult
	if callTool("read_file", map[string]any{"workspace": ws.ID, "path": "out.txt"}, &read); read.Content != "FROM MCP-GO\n" || read.Next != 12 {
		t.Fatalf("read_file: %+v", read)
	}
	var list api.FileList
	callTool("list_files", map[string]any{"workspace": ws.ID}, &list)
	var files []string
	for _, f := range list.Files {
		files = append(files, f.Name+":"+f.Type)
	}
	if slices.Sort(files); strings.Join(files, " ") != "out.txt:file src:dir" {
		t.Fatalf("list_files: %+v", list)
	}
	var deleted api.WorkspaceRequest
	if callTool("delete_workspace", map[string]any{"workspace": ws.ID}, &deleted); deleted.Workspace != ws.ID {
		t.Fatalf("delete_workspace: %+v", deleted)
	}
	return p.ID
}
