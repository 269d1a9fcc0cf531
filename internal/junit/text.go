package junit

import (
	"fmt"
	"strings"

	"github.com/airlock-sandbox/airlock/api"
)

// The bounds of Text: a glance, not the report. Whoever wants more reads the
// TestReport or the files.
const (
	textFailures = 10
	textInvalid  = 3
	textMessage  = 200
)

// Text renders r in a few lines for an agent: the counts, then one line for each
// of the first failures with the first line of its message, then the files that
// could not be read. For example:
//
//	tests: 3 passed, 1 failed, 0 skipped, 0 errors
//	FAIL tests.test_math.test_add: assert 2 == 3
func Text(r api.TestReport) string {
	var b strings.Builder
	if r.Error != "" {
		return "tests: " + r.Error
	}
	if len(r.Files) == 0 && len(r.Invalid) == 0 {
		return "tests: no report files"
	}
	fmt.Fprintf(&b, "tests: %d passed, %d failed, %d skipped, %d errors", r.Passed, r.Failed, r.Skipped, r.Errors)
	shown := 0
	for _, f := range r.Failures[:min(len(r.Failures), textFailures)] {
		fmt.Fprintf(&b, "\n%s %s", label(f.Kind), f.Name)
		if line := firstLine(f.Message); line != "" {
			fmt.Fprintf(&b, ": %s", line)
		}
		shown++
	}
	if more := r.Failed + r.Errors - shown; more > 0 {
		fmt.Fprintf(&b, "\n… and %d more failed or errored", more)
	}
	for _, inv := range r.Invalid[:min(len(r.Invalid), textInvalid)] {
		fmt.Fprintf(&b, "\nunreadable report %s: %s", inv.File, inv.Reason)
	}
	if more := len(r.Invalid) - textInvalid; more > 0 {
		fmt.Fprintf(&b, "\n… and %d more unreadable reports", more)
	}
	return b.String()
}

func label(kind string) string {
	if kind == api.TestErrored {
		return "ERROR"
	}
	return "FAIL"
}

// firstLine is the first line of msg with text on it, cut to textMessage bytes.
func firstLine(msg string) string {
	for line := range strings.Lines(msg) {
		if line = strings.TrimSpace(line); line != "" {
			line, _ = cut(line, textMessage)
			return line
		}
	}
	return ""
}
