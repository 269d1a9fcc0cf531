package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// doorLimit is the largest command a run, a job, a check or an MCP tool
// takes (the kernel's limit on one argument, less one byte).
const doorLimit = 128<<10 - 1

// worstCommands are the commands that cost the shell parser most for their
// size, each as large as a door takes: every construct the parser nests by
// recursion, and the flat scripts that build the most nodes.
func worstCommands() map[string]string {
	fill := func(open, inner, close string) string {
		k := (doorLimit - len(inner)) / (len(open) + len(close))
		return strings.Repeat(open, k) + inner + strings.Repeat(close, k)
	}
	repeat := func(unit string) string { return strings.Repeat(unit, doorLimit/len(unit)) }
	commands := map[string]string{
		"(":            repeat("("),
		"$(":           fill("$(", "a", ")"),
		`"$(`:          repeat(`"$(`),
		"{":            fill("{ ", "a", "; }"),
		"`":            backquotes(doorLimit),
		"$((":          fill("$((", "1", "))"),
		"arithmetic !": "$((" + strings.Repeat("!", doorLimit-6) + "1))",
		"a=(":          repeat("$(a=("),
		"${":           fill("${a:-", "b", "}"),
		"[[ !":         "[[ " + strings.Repeat("! ", doorLimit/2-4) + "a ]]",
		"if":           fill("if a; then ", "b", "; fi"),
		"while":        fill("while a; do ", "b", "; done"),
		"case":         fill("case a in a) ", "b", ";; esac"),
		"&&":           repeat("a && "),
		"pipeline":     repeat("a|"),
		"here-docs":    repeat("$(cat <<A\n"),
		"{a,":          "echo " + fill("{a,", "b", "}"),
	}
	for name, c := range commands {
		commands[name] = c[:min(len(c), doorLimit)]
	}
	return commands
}

// backquotes nests backquotes in n bytes: the parser drops a backslash a
// level before a backquote, so level k opens with k-1 backslashes.
func backquotes(n int) string {
	var b strings.Builder
	for k := 0; b.Len()+k+1 <= n; k++ {
		b.WriteString(strings.Repeat("\\", k) + "`")
	}
	return b.String()
}

// TestTooComplexCommands sends the worst commands, all at once, through
// every door of a real server (a check, a run, a background job, MCP over
// HTTP) and of `airlock mcp` over stdio: each answers within seconds with a
// too-complex refusal, neither process's memory grows past a bound, and the
// server still runs commands afterwards.
func TestTooComplexCommands(t *testing.T) {
	const (
		answerWithin = 10 * time.Second
		maxPeak      = 300 << 20 // the peak resident memory (VmHWM) of each process
	)
	srv := startServe(t, freePort(t), t.TempDir())
	client := mcp.NewClient(&mcp.Implementation{Name: "airlock-too-complex", Version: "v0"}, nil)
	httpMCP, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.url + "/mcp"}, nil)
	if err != nil {
		t.Fatalf("connect to /mcp: %v", err)
	}
	t.Cleanup(func() { httpMCP.Close() })
	stdio := exec.Command(airlockCLI(t), "mcp")
	stdio.Env = append(os.Environ(), "AIRLOCK_DATA="+t.TempDir())
	stdioErr := &lockedBuffer{}
	stdio.Stderr = stdioErr
	stdioMCP, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: stdio}, nil)
	if err != nil {
		t.Fatalf("connect to airlock mcp: %v\n%s", err, stdioErr.String())
	}
	t.Cleanup(func() { stdioMCP.Close() })

	type door struct {
		name string
		ask  func(ctx context.Context, command string) (rule string, err error)
	}
	doors := []door{
		{"POST /v1/check", func(ctx context.Context, c string) (string, error) {
			var d struct{ Rule string }
			return d.Rule, postWithin(ctx, srv.url+"/v1/check", map[string]any{"command": c}, http.StatusOK, &d)
		}},
		{"POST /v1/check argv sh -c", func(ctx context.Context, c string) (string, error) {
			var d struct{ Rule string }
			return d.Rule, postWithin(ctx, srv.url+"/v1/check", map[string]any{"argv": []string{"sh", "-c", c}}, http.StatusOK, &d)
		}},
		{"POST /v1/processes", func(ctx context.Context, c string) (string, error) {
			var r struct {
				BlockRule string `json:"block_rule"`
			}
			return r.BlockRule, postWithin(ctx, srv.url+"/v1/processes", map[string]any{"command": c}, http.StatusOK, &r)
		}},
		{"POST /v1/processes background", func(ctx context.Context, c string) (string, error) {
			var p struct {
				BlockRule string `json:"block_rule"`
			}
			return p.BlockRule, postWithin(ctx, srv.url+"/v1/processes", map[string]any{"command": c, "background": true}, 0, &p)
		}},
		{"MCP over HTTP check", mcpTool(httpMCP, "check", "rule")},
		{"MCP over HTTP run", mcpTool(httpMCP, "run", "block_rule")},
		{"MCP over stdio check", mcpTool(stdioMCP, "check", "rule")},
		{"MCP over stdio start", mcpTool(stdioMCP, "start", "block_rule")},
	}

	commands := worstCommands()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8) // several at once, not all: the machine has few cores
	for name, command := range commands {
		for _, d := range doors {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				ctx, cancel := context.WithTimeout(t.Context(), answerWithin)
				defer cancel()
				start := time.Now()
				rule, err := d.ask(ctx, command)
				took := time.Since(start)
				switch {
				case err != nil:
					t.Errorf("%s, %s (%d bytes): %v after %v", d.name, name, len(command), err, took)
				case rule != "too-complex":
					t.Errorf("%s, %s (%d bytes): rule %q, want too-complex", d.name, name, len(command), rule)
				case took > answerWithin:
					t.Errorf("%s, %s: answered in %v", d.name, name, took)
				}
			})
		}
	}
	wg.Wait()

	// One byte past the doors' limit is refused as an invalid request,
	// unread by the policy.
	over := strings.Repeat("(", doorLimit+1)
	ctx, cancel := context.WithTimeout(t.Context(), answerWithin)
	defer cancel()
	var e struct{ Code string }
	if err := postWithin(ctx, srv.url+"/v1/check", map[string]any{"command": over}, http.StatusBadRequest, &e); err != nil {
		t.Errorf("a check of %d bytes: %v", len(over), err)
	}

	for _, p := range []struct {
		name string
		pid  int
	}{{"airlock serve", srv.cmd.Process.Pid}, {"airlock mcp", stdio.Process.Pid}} {
		peak := peakRSSOf(strconv.Itoa(p.pid))
		t.Logf("%s: peak resident memory %d MiB after %d commands of %d bytes through %d doors",
			p.name, peak>>20, len(commands), doorLimit, len(doors))
		if peak > maxPeak {
			t.Errorf("%s: peak resident memory %d MiB, over %d MiB", p.name, peak>>20, maxPeak>>20)
		}
	}

	var res struct {
		State  string
		Stdout string
	}
	if err := postWithin(t.Context(), srv.url+"/v1/processes", map[string]any{"command": "echo ok"}, http.StatusOK, &res); err != nil || res.Stdout != "ok\n" {
		t.Fatalf("echo ok after the hostile commands: %+v %v\n%s", res, err, srv.stderr.String())
	}
}

// postWithin posts body as JSON and decodes the answer into out; want is the
// status expected (0: any 2xx).
func postWithin(ctx context.Context, url string, body any, want int, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if want != 0 && resp.StatusCode != want || want == 0 && resp.StatusCode/100 != 2 {
		return fmt.Errorf("status %d: %.300s", resp.StatusCode, b)
	}
	return json.Unmarshal(b, out)
}

// mcpTool calls an MCP tool with a command and returns the field of its
// answer that names the rule.
func mcpTool(s *mcp.ClientSession, tool, field string) func(ctx context.Context, c string) (string, error) {
	return func(ctx context.Context, c string) (string, error) {
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"command": c}})
		if err != nil {
			return "", err
		}
		if res.IsError {
			return "", fmt.Errorf("tool error: %+v", res.Content)
		}
		data, _ := json.Marshal(res.StructuredContent)
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			return "", err
		}
		rule, _ := m[field].(string)
		return rule, nil
	}
}
