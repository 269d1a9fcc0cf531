package executor

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/internal/junit"
)

// TestReport is the summary of a run's JUnit reports.
type TestReport = api.TestReport

// parseReport reads a Spec's report, "junit:DIR/PATTERN" (api.ParseReport):
// a directory of the workspace and a pattern of file names in it.
func parseReport(report string) (dir, pattern string, err error) {
	_, glob, err := api.ParseReport(report)
	if err != nil {
		return "", "", err
	}
	dir, pattern = path.Split(glob)
	if dir, err = workspacePath("report", dir); err != nil {
		return "", "", &SpecError{Field: "report", Reason: strings.TrimPrefix(err.Error(), ErrUnsafePath.Error()+": report: ")}
	}
	return dir, pattern, nil
}

// testReport reads the run's JUnit reports from its workspace and summarises
// them. Whatever goes wrong is said in the report's Error: the run's own
// result stands.
func (e *Executor) testReport(ctx context.Context, s Spec, c Caller) *TestReport {
	fail := func(format string, args ...any) *TestReport {
		return &TestReport{Files: []string{}, Error: fmt.Sprintf(format, args...)}
	}
	dir, pattern, err := parseReport(s.Report)
	if err != nil {
		return fail("%v", err)
	}
	r, err := e.workspaceRecord(ctx, s.Workspace, c)
	if err != nil {
		return fail("%v", err)
	}
	// The agent checks the files' sizes on their descriptors before it reads
	// any: a sparse file of gigabytes is refused at once.
	var out bytes.Buffer
	args := []string{"report", dir, pattern, strconv.Itoa(junit.MaxFiles), strconv.Itoa(junit.MaxBytes)}
	if err := e.holderExec(ctx, r, args, nil, &limitedWriter{w: &out, n: junit.MaxBytes + 1<<20}); err != nil {
		switch {
		case errors.Is(err, ErrFileNotFound):
			return fail("no file matched %s in the workspace: %v", strings.TrimPrefix(s.Report, "junit:"), err)
		case errors.As(err, new(overLimit)):
			return fail("the reports total more than %d bytes", junit.MaxBytes)
		}
		return fail("read the reports: %v", err)
	}
	var files []junit.File
	tr := tar.NewReader(&out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fail("the reports total more than %d bytes", junit.MaxBytes)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return fail("the reports total more than %d bytes", junit.MaxBytes)
		}
		files = append(files, junit.File{Name: path.Join(dir, h.Name), Data: data})
	}
	if len(files) == 0 {
		return fail("no file matched %s in the workspace", strings.TrimPrefix(s.Report, "junit:"))
	}
	rep, err := junit.Summarize(files)
	if err != nil {
		return fail("%v", err)
	}
	return &rep
}
