package junit

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/api"
	gojunit "github.com/joshdk/go-junit"
)

// The bounds of a summary. MaxFiles and MaxBytes are for the caller too: it
// should stop reading report files once it reaches them.
const (
	// MaxFiles is the most report files one summary reads. Surefire writes one
	// file per test class, so a large Java build can write hundreds.
	MaxFiles = 1000
	// MaxBytes is the most bytes of reports, all files together, one summary reads.
	MaxBytes = 8 << 20
	// MaxFailures is the most failures a TestReport lists; the counts are exact.
	MaxFailures = 50
	// MaxMessage is the most bytes of a failure's message.
	MaxMessage = 1 << 10
	// MaxName is the most bytes of a test's name or file, and of a file's reason.
	MaxName = 256
	// maxMessageLines is how much of a failure's text stands in for a missing
	// message: enough for an assertion and where it failed, not a whole stack.
	maxMessageLines = 20
)

// ErrTooLarge is returned when the files given to Summarize pass MaxFiles or
// MaxBytes; nothing is summarised.
var ErrTooLarge = errors.New("test reports too large")

// File is one report file: its path relative to the workspace, and its contents.
type File struct {
	Name string
	Data []byte
}

// Summarize counts the test cases of files and lists the first MaxFailures that
// failed or errored. A file that is not JUnit XML is listed in the report's
// Invalid and its tests are not counted; the error is for files past MaxFiles or
// MaxBytes only, and names the file that crossed the bound.
func Summarize(files []File) (api.TestReport, error) {
	if err := checkSize(files); err != nil {
		return api.TestReport{}, err
	}
	r := api.TestReport{Files: []string{}}
	for _, f := range files {
		name, _ := cut(f.Name, MaxName)
		suites, err := parse(f.Data)
		if err != nil {
			reason, _ := cut(err.Error(), MaxName)
			r.Invalid = append(r.Invalid, api.InvalidReport{File: name, Reason: reason})
			continue
		}
		r.Files = append(r.Files, name)
		for _, s := range suites {
			addSuite(&r, s)
		}
	}
	return r, nil
}

func checkSize(files []File) error {
	if len(files) > MaxFiles {
		return fmt.Errorf("%s: %w: %d report files, more than the %d read", files[MaxFiles].Name, ErrTooLarge, len(files), MaxFiles)
	}
	total := 0
	for _, f := range files {
		total += len(f.Data)
		if total > MaxBytes {
			return fmt.Errorf("%s: %w: the reports pass %d MiB in all", f.Name, ErrTooLarge, MaxBytes>>20)
		}
	}
	return nil
}

// parse reads one file's test suites. Invalid UTF-8 is replaced rather than
// refused: a test that printed binary output should not cost the whole file.
func parse(data []byte) ([]gojunit.Suite, error) {
	if !utf8.Valid(data) {
		data = bytes.ToValidUTF8(data, []byte("\uFFFD"))
	}
	if err := checkShape(data); err != nil {
		return nil, err
	}
	suites, err := gojunit.Ingest(data)
	if err != nil {
		return nil, err
	}
	if len(suites) == 0 {
		return nil, errors.New("no <testsuite> element: not a JUnit report")
	}
	return suites, nil
}

// addSuite counts the cases of s and of the suites nested in it.
func addSuite(r *api.TestReport, s gojunit.Suite) {
	for _, t := range s.Tests {
		addTest(r, t)
	}
	for _, inner := range s.Suites {
		addSuite(r, inner)
	}
}

func addTest(r *api.TestReport, t gojunit.Test) {
	kind := ""
	switch t.Status {
	case gojunit.StatusPassed:
		r.Passed++
	case gojunit.StatusSkipped:
		r.Skipped++
	case gojunit.StatusFailed:
		r.Failed++
		kind = api.TestFailed
	case gojunit.StatusError:
		r.Errors++
		kind = api.TestErrored
	}
	if kind == "" {
		return
	}
	if len(r.Failures) == MaxFailures {
		r.Truncated = true
		return
	}
	f, cutShort := failure(t, kind)
	r.Failures = append(r.Failures, f)
	r.Truncated = r.Truncated || cutShort
}

// failure describes t, and says whether anything of it was cut to fit.
func failure(t gojunit.Test, kind string) (api.TestFailure, bool) {
	name, c1 := cut(testName(t), MaxName)
	file, c2 := cut(t.Properties["file"], MaxName)
	msg, c3 := message(t)
	return api.TestFailure{Name: name, Kind: kind, File: file, Message: msg}, c1 || c2 || c3
}

// testName joins class and name as most tools mean them to be read. jest-junit's
// default names already begin with the class, so those are kept as they are.
func testName(t gojunit.Test) string {
	switch {
	case t.Classname == "":
		return t.Name
	case t.Name == "":
		return t.Classname
	case strings.HasPrefix(t.Name, t.Classname):
		return t.Name
	}
	return t.Classname + "." + t.Name
}

// message picks what an agent should read first about a failure: its message,
// unless that is missing or says no more than that the test failed; then the first
// lines of its text (jest-junit writes only text, go-junit-report puts the test's
// output there); then the exception's type.
func message(t gojunit.Test) (string, bool) {
	var e gojunit.Error
	if te, ok := t.Error.(gojunit.Error); ok {
		e = te
	}
	msg := strings.TrimSpace(t.Message)
	body := strings.TrimSpace(e.Body)
	cutLines := false
	switch {
	case msg != "" && !(saysNothing(msg) && body != ""):
	case body != "":
		msg, cutLines = firstLines(body, maxMessageLines)
	default:
		msg = e.Type
	}
	msg, cutBytes := cut(msg, MaxMessage)
	return msg, cutLines || cutBytes
}

// saysNothing is true of the messages go-junit-report writes for every failure.
func saysNothing(msg string) bool {
	switch strings.ToLower(msg) {
	case "failed", "failure", "error", "runtime error", "build error":
		return true
	}
	return false
}

// firstLines returns the first n lines of s, and whether there were more.
func firstLines(s string, n int) (string, bool) {
	i := 0
	for range n {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			return s, false
		}
		i += j + 1
	}
	return strings.TrimRight(s[:i], "\r\n"), true
}

// ellipsis marks a string that was cut, for a reader who sees the string alone.
const ellipsis = "…"

// cut returns s as valid UTF-8 of at most n bytes, and whether it was cut. A cut
// falls between runes and ends in an ellipsis.
func cut(s string, n int) (string, bool) {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s, false
	}
	i := n - len(ellipsis)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + ellipsis, true
}
