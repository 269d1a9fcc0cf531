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

// reportScript archives the regular files (not links) of the entered directory
// whose names match the pattern in $4, at most junit.MaxFiles of them.
var reportScript = `pat=$4
shift 4
for f in $pat; do
  if [ -f "$f" ] && [ ! -L "$f" ] && [ $# -lt ` + strconv.Itoa(junit.MaxFiles) + ` ]; then set -- "$@" "$f"; fi
done
[ $# -gt 0 ] || exit 0
exec tar -c -f - -- "$@"`

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
	var out bytes.Buffer
	if err := e.holderExec(ctx, r, reportScript, []string{dir, "", "", pattern}, nil, &limitedWriter{w: &out, n: junit.MaxBytes + 1<<20}); err != nil {
		if errors.Is(err, ErrFileNotFound) {
			return fail("no file matched %s in the workspace: %v", strings.TrimPrefix(s.Report, "junit:"), err)
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
