package junit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/api"
)

func TestText(t *testing.T) {
	many := api.TestReport{Failed: 60, Files: []string{"r.xml"}, Truncated: true}
	for i := range MaxFailures {
		many.Failures = append(many.Failures, api.TestFailure{Name: fmt.Sprintf("t%d", i), Kind: api.TestFailed, Message: "no"})
	}
	for _, tt := range []struct {
		name string
		in   api.TestReport
		want string
	}{
		{"no files", api.TestReport{Files: []string{}}, "tests: no report files"},
		{"all passed", api.TestReport{Passed: 3, Files: []string{"r.xml"}}, "tests: 3 passed, 0 failed, 0 skipped, 0 errors"},
		{
			"a failure and an error",
			api.TestReport{Passed: 3, Failed: 1, Errors: 1, Files: []string{"r.xml"}, Failures: []api.TestFailure{
				{Name: "tests.test_math.test_add", Kind: api.TestFailed, Message: "assert 2 == 3\n +  where 2 = add(1, 1)"},
				{Name: "tests.test_io.test_read", Kind: api.TestErrored, Message: "\n\n  FileNotFoundError: config.toml  \n"},
			}},
			"tests: 3 passed, 1 failed, 0 skipped, 1 errors\nFAIL tests.test_math.test_add: assert 2 == 3\nERROR tests.test_io.test_read: FileNotFoundError: config.toml",
		},
		{
			"no message",
			api.TestReport{Failed: 1, Files: []string{"r.xml"}, Failures: []api.TestFailure{{Name: "t", Kind: api.TestFailed}}},
			"tests: 0 passed, 1 failed, 0 skipped, 0 errors\nFAIL t",
		},
		{
			"unreadable files",
			api.TestReport{Files: []string{}, Invalid: []api.InvalidReport{
				{File: "a.xml", Reason: "XML syntax error on line 3: unexpected EOF"},
				{File: "b.xml", Reason: "x"}, {File: "c.xml", Reason: "x"}, {File: "d.xml", Reason: "x"},
			}},
			"tests: 0 passed, 0 failed, 0 skipped, 0 errors\nunreadable report a.xml: XML syntax error on line 3: unexpected EOF\nunreadable report b.xml: x\nunreadable report c.xml: x\n… and 1 more unreadable reports",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Text(tt.in); got != tt.want {
				t.Errorf("Text:\n got %q\nwant %q", got, tt.want)
			}
		})
	}

	t.Run("bounded", func(t *testing.T) {
		many.Failures[0].Message = strings.Repeat("x", MaxMessage)
		got := Text(many)
		lines := strings.Split(got, "\n")
		if len(lines) != 1+textFailures+1 || lines[len(lines)-1] != "… and 50 more failed or errored" {
			t.Errorf("Text of 60 failures: %d lines, ending %q", len(lines), lines[len(lines)-1])
		}
		if len(lines[1]) > len("FAIL t0: ")+textMessage {
			t.Errorf("a failure's line is %d bytes", len(lines[1]))
		}
	})
}
