package api

import (
	"fmt"
	"path"
	"strings"
)

// TestReport summarises the JUnit XML reports a run wrote. The counts cover every
// test case of the files read; the lists are bounded, because the reports come
// from the sandbox and may be as large or as hostile as the code that wrote them.
type TestReport struct {
	Passed  int `json:"passed" jsonschema:"test cases that passed"`
	Failed  int `json:"failed" jsonschema:"test cases whose assertions failed"`
	Skipped int `json:"skipped" jsonschema:"test cases skipped or disabled"`
	Errors  int `json:"errors" jsonschema:"test cases that could not run to their end (an exception, a setup that failed)"`
	// Failures lists the failed and errored cases in report order, the first 50.
	Failures []TestFailure `json:"failures,omitempty" jsonschema:"the failed and errored test cases, in report order, at most 50"`
	// Truncated is true when Failures, or a name or message in it, was cut to its bound.
	Truncated bool `json:"truncated,omitempty" jsonschema:"true when failures past the first 50 or the ends of long messages were left out; the report files hold them"`
	// Files are the report files whose tests are counted, relative to the workspace.
	Files []string `json:"files" jsonschema:"the report files read, relative to the workspace"`
	// Invalid are the files that matched but could not be read as JUnit XML; a run
	// killed while its test runner wrote a report leaves one, and the other files
	// still count.
	Invalid []InvalidReport `json:"invalid,omitempty" jsonschema:"report files that matched but could not be read as JUnit XML, and why; their tests are not counted"`
	// Error says why no report was read at all: none matched, or they were too large.
	Error string `json:"error,omitempty" jsonschema:"why no report was read: no file matched the glob, or the reports were too large"`
}

// TestFailure is one failed or errored test case.
type TestFailure struct {
	// Name is classname.name, or the name alone when it already says the class.
	Name string `json:"name" jsonschema:"the test case, as classname.name"`
	// Kind is TestFailed or TestErrored.
	Kind string `json:"kind" jsonschema:"failure (an assertion failed) or error (the test could not run to its end)"`
	// File is the test's source file, as the test tool gave it, if it did.
	File string `json:"file,omitempty" jsonschema:"the test's source file, as the test tool wrote it"`
	// Message is the failure's message, or the first lines of its text when the
	// message says nothing; at most 1 KiB, always valid UTF-8.
	Message string `json:"message" jsonschema:"the failure message, or the first lines of the failure text; at most 1 KiB"`
}

// The kinds of a TestFailure, named as the JUnit elements they come from.
const (
	TestFailed  = "failure"
	TestErrored = "error"
)

// InvalidReport is a report file that could not be read, and why.
type InvalidReport struct {
	File   string `json:"file" jsonschema:"the report file, relative to the workspace"`
	Reason string `json:"reason" jsonschema:"why it could not be read"`
}

// ReportJUnit is the one report format airlock reads.
const ReportJUnit = "junit"

// maxReportGlob bounds the glob; a path pattern needs nowhere near as much.
const maxReportGlob = 1024

// ParseReport parses a run's report field, "junit:GLOB", where GLOB names report
// files relative to the workspace: a directory, and a path.Match pattern of
// file names in it, so "reports/*.xml" and "target/surefire-reports/TEST-*.xml"
// work; a pattern in the directory does not (it is walked as every workspace
// path is, refusing links), nor "**", which path.Match would read as "*". The glob comes back cleaned
// ("./reports//*.xml" gives "reports/*.xml"). A malformed field is a *SpecError
// for the field "report".
func ParseReport(s string) (format, glob string, err error) {
	format, glob, found := strings.Cut(s, ":")
	if !found {
		return "", "", reportError("want FORMAT:GLOB, e.g. junit:reports/*.xml")
	}
	if format != ReportJUnit {
		return "", "", reportError("unknown format %q: the one supported is junit, e.g. junit:reports/*.xml", format)
	}
	glob, err = checkGlob(glob)
	if err != nil {
		return "", "", err
	}
	return format, glob, nil
}

// checkGlob refuses a glob that could reach outside the workspace or could never
// match, and returns it cleaned.
func checkGlob(glob string) (string, error) {
	switch {
	case glob == "":
		return "", reportError("the glob after junit: is empty; e.g. junit:reports/*.xml")
	case len(glob) > maxReportGlob:
		return "", reportError("the glob is %d bytes, more than %d", len(glob), maxReportGlob)
	case strings.ContainsRune(glob, 0):
		return "", reportError("the glob contains a NUL byte")
	case strings.HasPrefix(glob, "/"):
		return "", reportError("the glob %q is absolute; give a path relative to the workspace", glob)
	case strings.HasSuffix(glob, "/"):
		return "", reportError("the glob %q names a directory; name the files in it, e.g. %s*.xml", glob, glob)
	}
	for part := range strings.SplitSeq(glob, "/") {
		if part == ".." {
			return "", reportError("the glob %q has a .. part; report files must be inside the workspace", glob)
		}
		if strings.Contains(part, "**") {
			return "", reportError("the glob %q uses **, which is not supported; name the directory and match the file names in it, e.g. reports/*.xml", glob)
		}
		if _, err := path.Match(part, ""); err != nil {
			return "", reportError("the glob %q is malformed (an unclosed [ or a trailing \\)", glob)
		}
	}
	glob = path.Clean(glob)
	// The directory is walked one component at a time, refusing links (as every
	// workspace operation is): only the file names may be a pattern.
	if dir := path.Dir(glob); strings.ContainsAny(dir, "*?[") {
		return "", reportError("the glob %q has a pattern in its directory; only the file names may be one, e.g. target/surefire-reports/TEST-*.xml", glob)
	}
	if glob == "." {
		return "", reportError("the glob names the workspace itself, not report files; e.g. junit:reports/*.xml")
	}
	return glob, nil
}

func reportError(format string, args ...any) error {
	return &SpecError{Field: "report", Reason: fmt.Sprintf(format, args...)}
}
