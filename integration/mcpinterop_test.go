package integration

import (
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

	"github.com/airlock-sandbox/airlock/executor"
)

// An MCP client we did not write, mark3labs/mcp-go, with its default options,
// against a real `airlock serve` over HTTP and `airlock mcp` over stdio.

// TestMCPInteropHTTP: initialize (after the client's probe of the stateless
// protocol), the tools, a run, a background job through start, wait and logs,
// and a check; then another tenant's token on the client's session is refused.
func TestMCPInteropHTTP(t *testing.T) {
	addr, dataDir := freePort(t), t.TempDir()
	s := startServe(t, addr, dataDir, "AIRLOCK_TOKENS=tok-a:alpha,tok-b:beta")
	c, err := mcpgo.NewStreamableHttpClient(s.url+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer tok-a"}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	exerciseMCPClient(t, c)

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

// TestMCPInteropStdio: the same client over `airlock mcp`.
func TestMCPInteropStdio(t *testing.T) {
	env := append(os.Environ(), "AIRLOCK_DATA="+t.TempDir())
	c, err := mcpgo.NewStdioMCPClient(airlockCLI(t), env, "mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	exerciseMCPClient(t, c)
}

func exerciseMCPClient(t *testing.T, c *mcpgo.Client) {
	t.Helper()
	ctx := t.Context()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "mcp-go", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
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
	if callTool("run", map[string]any{"command": "echo hi; exit 3"}, &r); r.Stdout != "hi\n" || r.ExitCode != 3 {
		t.Fatalf("run: %+v", r)
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
}
