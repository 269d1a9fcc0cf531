package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/client"
)

// The agent's loop against a real server, as an agent platform drives it:
// upload a project with a failing test, run pytest, upload the fix, run again,
// read the report, delete the workspace.

// pythonProject is a small project whose one test fails until calc.add is fixed.
var pythonProject = map[string]string{
	"calc.py":      "def add(a, b):\n    return a - b\n",
	"test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n",
}

const (
	pytestCommand = "python3 -m pytest -q -p no:cacheprovider --junitxml=reports/junit.xml"
	fixedCalc     = "def add(a, b):\n    return a + b\n"
)

func projectArchive(t *testing.T, files map[string]string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, data := range files {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data))})
		io.WriteString(tw, data)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func testServerWorkspaceLoopHTTP(t *testing.T, s *airlockServer) {
	ctx := t.Context()
	c, err := client.New(s.url, tokenAlpha)
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.CreateWorkspace(ctx, api.WorkspaceSpec{Size: 64 << 20, Labels: map[string]string{"agent": "loop"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PutArchive(ctx, w.ID, "", bytes.NewReader(projectArchive(t, pythonProject))); err != nil {
		t.Fatal(err)
	}
	spec := api.Spec{Command: pytestCommand, Image: "airlock/debian", Workspace: w.ID, Timeout: 120, Report: "junit:reports/*.xml"}
	res, err := c.Run(ctx, spec, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 1 || !strings.Contains(res.Stdout, "1 failed, 1 passed") || !strings.Contains(res.Stdout, "assert -1 == 5") {
		t.Fatalf("first run: exit %d\n%s\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	// The report says the same, for an agent to read without parsing pytest.
	if tr := res.Tests; tr == nil || tr.Passed != 1 || tr.Failed != 1 || len(tr.Failures) != 1 ||
		!strings.Contains(tr.Failures[0].Name, "test_add") || !strings.Contains(tr.Failures[0].Message, "assert -1 == 5") ||
		len(tr.Files) != 1 || tr.Files[0] != "reports/junit.xml" {
		t.Errorf("tests = %+v", res.Tests)
	}
	if res.Workspace != w.ID {
		t.Errorf("result's workspace = %q", res.Workspace)
	}
	if err := c.PutFile(ctx, w.ID, "calc.py", 0o644, strings.NewReader(fixedCalc)); err != nil {
		t.Fatal(err)
	}
	if res, err = c.Run(ctx, spec, nil, nil); err != nil || res.ExitCode != 0 || !strings.Contains(res.Stdout, "2 passed") {
		t.Fatalf("second run: %v exit %d\n%s\n%s", err, res.ExitCode, res.Stdout, res.Stderr)
	}
	if tr := res.Tests; tr == nil || tr.Passed != 2 || tr.Failed != 0 {
		t.Errorf("tests after the fix = %+v", res.Tests)
	}
	// A report that is not there is said so; the run's result stands.
	missing := spec
	missing.Report = "junit:nowhere/*.xml"
	if res, err = c.Run(ctx, missing, nil, nil); err != nil || res.ExitCode != 0 || res.Tests == nil || !strings.Contains(res.Tests.Error, "no file matched") {
		t.Errorf("missing report: %v %+v", err, res.Tests)
	}
	rc, _, err := c.OpenFile(ctx, w.ID, "reports/junit.xml")
	if err != nil {
		t.Fatal(err)
	}
	report, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Contains(report, []byte(`tests="2"`)) || !bytes.Contains(report, []byte(`failures="0"`)) {
		t.Errorf("report: %s", report)
	}
	list, err := c.ListFiles(ctx, w.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range list.Files {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, " "); !strings.Contains(got, "calc.py reports test_calc.py") {
		t.Errorf("files: %s", got)
	}

	// Another tenant sees nothing of it.
	beta, _ := client.New(s.url, tokenBeta)
	if _, err := beta.Workspace(ctx, w.ID); !errors.Is(err, api.ErrWorkspaceNotFound) {
		t.Errorf("beta gets alpha's workspace: %v", err)
	}
	if _, _, err := beta.OpenFile(ctx, w.ID, "calc.py"); !errors.Is(err, api.ErrWorkspaceNotFound) {
		t.Errorf("beta reads alpha's file: %v", err)
	}
	if _, err := beta.Run(ctx, api.Spec{Command: "cat calc.py", Workspace: w.ID}, nil, nil); !errors.Is(err, api.ErrInvalidSpec) {
		t.Errorf("beta runs on alpha's workspace: %v", err)
	}
	if err := c.RemoveWorkspace(ctx, w.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Workspace(ctx, w.ID); !errors.Is(err, api.ErrWorkspaceNotFound) {
		t.Errorf("deleted workspace: %v", err)
	}
}

func testServerWorkspaceLoopMCP(t *testing.T, s *airlockServer) {
	session := s.mcpSession(t, tokenAlpha)
	var w api.Workspace
	if res := callTool(t, session, "create_workspace", map[string]any{"size": 64 << 20}, &w); res.IsError || w.ID == "" {
		t.Fatalf("create_workspace: %s", toolText(res))
	}
	defer callTool(t, session, "delete_workspace", map[string]any{"workspace": w.ID}, nil)
	for name, data := range pythonProject {
		if res := callTool(t, session, "write_file", map[string]any{"workspace": w.ID, "path": name, "content": data}, nil); res.IsError {
			t.Fatalf("write_file %s: %s", name, toolText(res))
		}
	}
	run := map[string]any{"command": pytestCommand, "image": "airlock/debian", "workspace": w.ID, "timeout": 120, "report": "junit:reports/*.xml"}
	var r api.Result
	res := callTool(t, session, "run", run, &r)
	if r.ExitCode != 1 || !strings.Contains(toolText(res), "tests: 1 passed, 1 failed") || !strings.Contains(toolText(res), "FAIL ") {
		t.Fatalf("first run: exit %d: %s", r.ExitCode, toolText(res))
	}
	callTool(t, session, "write_file", map[string]any{"workspace": w.ID, "path": "calc.py", "content": fixedCalc}, nil)
	if res = callTool(t, session, "run", run, &r); r.ExitCode != 0 {
		t.Fatalf("second run: exit %d: %s", r.ExitCode, toolText(res))
	}
	var file api.ReadFileResult
	if res = callTool(t, session, "read_file", map[string]any{"workspace": w.ID, "path": "reports/junit.xml"}, &file); res.IsError ||
		!strings.Contains(file.Content, `failures="0"`) {
		t.Errorf("read_file: %s", toolText(res))
	}
	var list api.FileList
	if res = callTool(t, session, "list_files", map[string]any{"workspace": w.ID}, &list); res.IsError || len(list.Files) < 3 {
		t.Errorf("list_files: %s", toolText(res))
	}
	beta := s.mcpSession(t, tokenBeta)
	if res = callTool(t, beta, "read_file", map[string]any{"workspace": w.ID, "path": "calc.py"}, nil); !res.IsError {
		t.Errorf("beta read alpha's file over MCP: %s", toolText(res))
	}
}

// testServerWorkspaceBeforeRestart leaves a workspace with a file for
// testServerWorkspaceAfterRestart to find.
func testServerWorkspaceBeforeRestart(t *testing.T, s *airlockServer) string {
	c, _ := client.New(s.url, tokenAlpha)
	w, err := c.CreateWorkspace(t.Context(), api.WorkspaceSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PutFile(t.Context(), w.ID, "kept.txt", 0, strings.NewReader("across the restart")); err != nil {
		t.Fatal(err)
	}
	return w.ID
}

func testServerWorkspaceAfterRestart(t *testing.T, s *airlockServer, id string) {
	ctx := context.Background()
	c, _ := client.New(s.url, tokenAlpha)
	defer c.RemoveWorkspace(ctx, id)
	res, err := c.Run(ctx, api.Spec{Command: "cat kept.txt", Workspace: id}, nil, nil)
	if err != nil || res.Stdout != "across the restart" {
		t.Errorf("after the restart: %v %+v", err, res)
	}
}

// testServerWorkspacePaths: names with spaces and non-ASCII letters arrive as
// given; a file where a directory is answers 409 wrong_type; a path with ".."
// is refused, in every form, and never reaches another workspace.
func testServerWorkspacePaths(t *testing.T, s *airlockServer) {
	ctx := t.Context()
	c, err := client.New(s.url, tokenAlpha)
	if err != nil {
		t.Fatal(err)
	}
	var ws [2]string
	for i := range ws {
		w, err := c.CreateWorkspace(ctx, api.WorkspaceSpec{Size: 16 << 20})
		if err != nil {
			t.Fatal(err)
		}
		ws[i] = w.ID
		t.Cleanup(func() { c.RemoveWorkspace(context.WithoutCancel(ctx), w.ID) })
	}
	a, b := ws[0], ws[1]

	if err := c.PutFile(ctx, a, "dir with space/ü.txt", 0, strings.NewReader("u")); err != nil {
		t.Fatal(err)
	}
	list, err := c.ListFiles(ctx, a, "dir with space")
	if err != nil || len(list.Files) != 1 || list.Files[0].Name != "ü.txt" {
		t.Fatalf("listing of \"dir with space\": %+v, %v; want ü.txt, as given", list, err)
	}

	if err := c.PutFile(ctx, a, "pkg/mod.go", 0, strings.NewReader("package pkg")); err != nil {
		t.Fatal(err)
	}
	err = c.PutFile(ctx, a, "pkg", 0, strings.NewReader("a file where a directory is"))
	var e *api.Error
	if !errors.As(err, &e) || e.Status != 409 || e.Code != "wrong_type" {
		t.Errorf("a file over a directory: %v; want 409 wrong_type", err)
	}
	err = c.PutArchive(ctx, a, "", bytes.NewReader(projectArchive(t, map[string]string{"pkg": "x"})))
	if !errors.As(err, &e) || e.Status != 409 || e.Code != "wrong_type" {
		t.Errorf("an archive's file over a directory: %v; want 409 wrong_type", err)
	}

	if err := c.PutFile(ctx, b, "x", 0, strings.NewReader("b's own")); err != nil {
		t.Fatal(err)
	}
	escape := "../../" + b + "/files/x"
	if err := c.PutFile(ctx, a, escape, 0, strings.NewReader("written from a")); !errors.Is(err, api.ErrUnsafePath) {
		t.Errorf("PutFile(%q): %v; want refused_path", escape, err)
	}
	if err := c.RemoveFile(ctx, a, escape); !errors.Is(err, api.ErrUnsafePath) {
		t.Errorf("RemoveFile(%q): %v; want refused_path", escape, err)
	}
	for _, p := range []string{"a/../x", "./x", "a//x", "%2e%2e/x", "a%0Ax"} {
		req, _ := http.NewRequestWithContext(ctx, "PUT", s.url+"/v1/workspaces/"+a+"/files/"+p, strings.NewReader("x"))
		req.Header.Set("Authorization", "Bearer "+tokenAlpha)
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Error api.Error }
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != 400 || body.Error.Code != "refused_path" {
			t.Errorf("PUT files/%s: %d %q; want 400 refused_path", p, resp.StatusCode, body.Error.Code)
		}
	}
	rc, _, err := c.OpenFile(ctx, b, "x")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if string(got) != "b's own" {
		t.Errorf("another workspace's file became %q", got)
	}
}
