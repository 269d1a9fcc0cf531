package junit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/api"
)

func readFile(t *testing.T, name string) File {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return File{Name: "reports/" + name, Data: data}
}

// The samples in testdata mirror what each tool writes: one case that passes,
// one that fails, one skipped and, where the tool has them, one error.
func TestSummarizeDialects(t *testing.T) {
	for _, tt := range []struct {
		file string
		want api.TestReport
	}{
		{"pytest.xml", api.TestReport{
			Passed: 2, Failed: 1, Skipped: 1, Errors: 1,
			Failures: []api.TestFailure{
				{Name: "tests.test_math.test_add", Kind: api.TestFailed, Message: "assert 2 == 3\n +  where 2 = add(1, 1)"},
				{Name: "tests.test_io.test_read_config", Kind: api.TestErrored, Message: `failed on setup with "FileNotFoundError: [Errno 2] No such file or directory: 'config.toml'"`},
			},
			Files: []string{"reports/pytest.xml"},
		}},
		{"go-junit-report.xml", api.TestReport{
			Passed: 2, Failed: 1, Skipped: 1, Errors: 1,
			Failures: []api.TestFailure{
				{Name: "example.com/calc.TestSub", Kind: api.TestFailed, Message: "calc_test.go:14: Sub(3, 1) = 1, want 2"},
				{Name: "example.com/calc/parse.TestParse", Kind: api.TestErrored, Message: "panic: runtime error: index out of range [3] with length 3 [recovered]\n\ngoroutine 7 [running]:\ntesting.tRunner.func1.2({0x5154a0, 0xc000018120})\n\t/usr/local/go/src/testing/testing.go:1734 +0x21c\nexample.com/calc/parse.TestParse(0xc000003a40)\n\t/workspace/parse/parse_test.go:9 +0x1d"},
			},
			Files: []string{"reports/go-junit-report.xml"},
		}},
		{"jest-junit.xml", api.TestReport{
			Passed: 2, Failed: 1, Skipped: 1, Errors: 1,
			Failures: []api.TestFailure{
				{Name: "sum adds negative numbers", Kind: api.TestFailed, File: "src/sum.test.js", Message: "Error: expect(received).toBe(expected) // Object.is equality\n\nExpected: -3\nReceived: -1\n    at Object.toBe (/workspace/src/sum.test.js:9:24)\n    at Promise.then.completed (/workspace/node_modules/jest-circus/build/utils.js:298:28)\n    at new Promise (<anonymous>)"},
				{Name: "Test suite failed to run.src/broken.test.js", Kind: api.TestErrored, File: "src/broken.test.js", Message: "● Test suite failed to run\n\n    Cannot find module './missing' from 'src/broken.test.js'"},
			},
			Files: []string{"reports/jest-junit.xml"},
		}},
		{"surefire.xml", api.TestReport{
			Passed: 1, Failed: 1, Skipped: 1, Errors: 1,
			Failures: []api.TestFailure{
				{Name: "com.example.CalculatorTest.subtracts", Kind: api.TestFailed, Message: "expected: <2> but was: <1>"},
				{Name: "com.example.CalculatorTest.readsConfig", Kind: api.TestErrored, Message: "config.properties (No such file or directory)"},
			},
			Files: []string{"reports/surefire.xml"},
		}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			got, err := Summarize([]File{readFile(t, tt.file)})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Summarize:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// A half-written report costs only itself: the other files still count, and the
// report says which file was skipped and why.
func TestSummarizeSkipsInvalidFile(t *testing.T) {
	good := readFile(t, "surefire.xml")
	half := readFile(t, "pytest.xml")
	half.Data = half.Data[:len(half.Data)/2]
	got, err := Summarize([]File{half, good})
	if err != nil {
		t.Fatal(err)
	}
	if got.Passed != 1 || got.Failed != 1 || !reflect.DeepEqual(got.Files, []string{"reports/surefire.xml"}) {
		t.Errorf("counts or files: %+v", got)
	}
	if len(got.Invalid) != 1 || got.Invalid[0].File != "reports/pytest.xml" || !strings.Contains(got.Invalid[0].Reason, "unexpected EOF") {
		t.Errorf("Invalid = %+v, want pytest.xml for its unexpected EOF", got.Invalid)
	}
}

func TestSummarizeAllDialects(t *testing.T) {
	var files []File
	for _, name := range []string{"pytest.xml", "go-junit-report.xml", "jest-junit.xml", "surefire.xml"} {
		files = append(files, readFile(t, name))
	}
	got, err := Summarize(files)
	if err != nil {
		t.Fatal(err)
	}
	if got.Passed != 7 || got.Failed != 4 || got.Skipped != 4 || got.Errors != 4 || len(got.Failures) != 8 || got.Truncated || len(got.Files) != 4 {
		t.Errorf("Summarize of the four = %+v", got)
	}
}

func TestSummarizeNoFiles(t *testing.T) {
	got, err := Summarize(nil)
	if err != nil || got.Files == nil || len(got.Files) != 0 {
		t.Errorf("Summarize(nil) = %+v, %v; want empty Files, no error", got, err)
	}
}

// suite wraps test cases in a report, as a sandbox might write it.
func suite(cases string) []byte {
	return []byte(`<?xml version="1.0"?><testsuites><testsuite name="s">` + cases + `</testsuite></testsuites>`)
}

// The reports come from the sandbox: whatever they hold, the summary stays
// bounded and valid UTF-8, and a file that cannot be read is listed, not fatal.
func TestSummarizeHostile(t *testing.T) {
	for _, tt := range []struct {
		name    string
		data    []byte
		invalid string // a word of the reason the file is refused; "" if it is read
		check   func(t *testing.T, r api.TestReport)
	}{
		{
			name: "huge message, cut at a rune boundary",
			data: suite(`<testcase name="t"><failure message="` + strings.Repeat("é", 3<<20) + `"/></testcase>`),
			check: func(t *testing.T, r api.TestReport) {
				m := r.Failures[0].Message
				if len(m) > MaxMessage || !utf8.ValidString(m) || !strings.HasSuffix(m, ellipsis) || !r.Truncated {
					t.Errorf("message of %d bytes, valid %v, truncated %v", len(m), utf8.ValidString(m), r.Truncated)
				}
			},
		},
		{
			name: "huge text and no message: its first lines",
			data: suite(`<testcase name="t"><failure>` + strings.Repeat("line\n", 1<<20) + `</failure></testcase>`),
			check: func(t *testing.T, r api.TestReport) {
				if m := r.Failures[0].Message; m != strings.TrimSuffix(strings.Repeat("line\n", maxMessageLines), "\n") || !r.Truncated {
					t.Errorf("message %q, truncated %v", m, r.Truncated)
				}
			},
		},
		{
			name: "huge name and file",
			data: suite(`<testcase classname="c" name="` + strings.Repeat("n", 1<<20) + `" file="` + strings.Repeat("f", 1<<20) + `"><error/></testcase>`),
			check: func(t *testing.T, r api.TestReport) {
				f := r.Failures[0]
				if len(f.Name) > MaxName || len(f.File) > MaxName || !r.Truncated || f.Kind != api.TestErrored {
					t.Errorf("name %d bytes, file %d bytes, truncated %v, kind %q", len(f.Name), len(f.File), r.Truncated, f.Kind)
				}
			},
		},
		{
			name: "10,000 failures",
			data: suite(strings.Repeat(`<testcase name="t"><failure message="no"/></testcase>`, 10000)),
			check: func(t *testing.T, r api.TestReport) {
				if r.Failed != 10000 || len(r.Failures) != MaxFailures || !r.Truncated {
					t.Errorf("Failed %d, %d listed, truncated %v", r.Failed, len(r.Failures), r.Truncated)
				}
			},
		},
		{
			name: "invalid UTF-8 is replaced",
			data: suite("<testcase classname=\"c\xff\" name=\"t\"><failure message=\"bad \xc3\x28 byte\">\xfe</failure></testcase>"),
			check: func(t *testing.T, r api.TestReport) {
				f := r.Failures[0]
				if f.Name != "c\uFFFD.t" || f.Message != "bad \uFFFD( byte" {
					t.Errorf("failure %+v", f)
				}
			},
		},
		{
			name: "billion laughs",
			data: []byte(`<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<testsuite name="s"><testcase name="t"><failure message="&lol9;">&lol9;</failure></testcase></testsuite>`),
			invalid: "entity",
		},
		{
			name:    "entity in text only",
			data:    []byte(`<!DOCTYPE x [<!ENTITY big "boom">]><testsuite><testcase name="t"><failure>&big;</failure></testcase></testsuite>`),
			invalid: "entity",
		},
		{
			name:    "external entity",
			data:    []byte(`<!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><testsuite><testcase name="t"><failure>&xxe;</failure></testcase></testsuite>`),
			invalid: "entity",
		},
		{
			name:    "deeply nested elements",
			data:    []byte(strings.Repeat("<a>", 100000) + strings.Repeat("</a>", 100000)),
			invalid: "nested more than",
		},
		{
			name:    "deeply nested suites",
			data:    []byte(strings.Repeat("<testsuite>", MaxDepth+1) + strings.Repeat("</testsuite>", MaxDepth+1)),
			invalid: "nested more than",
		},
		{
			// Within MaxDepth, but every byte of the text would be held MaxDepth times.
			name:    "nested around a large text",
			data:    []byte(strings.Repeat("<testsuite>", MaxDepth) + strings.Repeat("x", 4<<20) + strings.Repeat("</testsuite>", MaxDepth)),
			invalid: "too many elements or too deeply nested",
		},
		{
			// Small, flat, and a few hundred megabytes once go-junit has built it.
			name:    "a quarter of a million tiny cases",
			data:    suite(strings.Repeat(`<testcase name="t"/>`, 250000)),
			invalid: "too many elements",
		},
		{
			name:    "binary bytes",
			data:    []byte{0x00, 0x01, 0x02, 0x89, 'P', 'N', 'G', 0x0d, 0x0a},
			invalid: "illegal character",
		},
		{
			name:    "plain text",
			data:    []byte("=== RUN TestAdd\n--- PASS: TestAdd (0.00s)\nPASS\n"),
			invalid: "no <testsuite>",
		},
		{
			name:    "empty",
			invalid: "no <testsuite>",
		},
		{
			name:    "XML that is not JUnit",
			data:    []byte(`<html><body>report</body></html>`),
			invalid: "no <testsuite>",
		},
		{
			name:    "unmatched tags",
			data:    []byte(`<testsuite><testcase name="t"></testsuite>`),
			invalid: "syntax error",
		},
		{
			// encoding/xml reads UTF-8 only; the tools that matter write it.
			name:    "another encoding",
			data:    []byte(`<?xml version="1.0" encoding="ISO-8859-1"?><testsuite><testcase name="caf` + "\xe9" + `"/></testsuite>`),
			invalid: "ISO-8859-1",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Summarize([]File{{Name: "r.xml", Data: tt.data}})
			if err != nil {
				t.Fatal(err)
			}
			if tt.invalid != "" {
				if len(got.Invalid) != 1 || !strings.Contains(got.Invalid[0].Reason, tt.invalid) || len(got.Files) != 0 {
					t.Errorf("Summarize = %+v; want r.xml invalid for %q", got, tt.invalid)
				}
				if r := got.Invalid[0].Reason; len(r) > MaxName || !utf8.ValidString(r) {
					t.Errorf("reason of %d bytes, valid UTF-8 %v", len(r), utf8.ValidString(r))
				}
				return
			}
			if len(got.Invalid) != 0 {
				t.Fatalf("refused: %+v", got.Invalid)
			}
			tt.check(t, got)
			for _, f := range got.Failures {
				for _, s := range []string{f.Name, f.File, f.Message} {
					if !utf8.ValidString(s) {
						t.Errorf("invalid UTF-8 in %+v", f)
					}
				}
			}
		})
	}
}

func TestSummarizeLimits(t *testing.T) {
	small := File{Name: "small.xml", Data: suite(`<testcase name="t"/>`)}
	big := File{Name: "reports/big.xml", Data: bytes.Repeat([]byte(" "), MaxBytes)}
	_, err := Summarize([]File{small, big})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "reports/big.xml") {
		t.Errorf("over MaxBytes: %v; want ErrTooLarge naming reports/big.xml", err)
	}

	many := make([]File, MaxFiles+1)
	for i := range many {
		many[i] = File{Name: fmt.Sprintf("TEST-%d.xml", i), Data: small.Data}
	}
	_, err = Summarize(many)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), fmt.Sprintf("TEST-%d.xml", MaxFiles)) {
		t.Errorf("over MaxFiles: %v; want ErrTooLarge naming the first file past the bound", err)
	}

	r, err := Summarize(many[:MaxFiles])
	if err != nil || r.Passed != MaxFiles {
		t.Errorf("MaxFiles files: %d passed, %v", r.Passed, err)
	}
}

func TestCut(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
		cut  bool
	}{
		{"short", 10, "short", false},
		{"exactly", 7, "exactly", false},
		{"abcdefghij", 8, "abcde…", true},
		{"ééééé", 8, "éé…", true}, // 5 bytes for runes leaves room for two, not two and a half
		{"bad\xffbyte", 20, "bad\uFFFDbyte", false},
	} {
		got, c := cut(tt.in, tt.n)
		if got != tt.want || c != tt.cut {
			t.Errorf("cut(%q, %d) = %q, %v; want %q, %v", tt.in, tt.n, got, c, tt.want, tt.cut)
		}
	}
}
