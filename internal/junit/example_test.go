package junit_test

import (
	"fmt"

	"github.com/airlock-sandbox/airlock/internal/junit"
)

func ExampleSummarize() {
	report := []byte(`<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="3">
  <testcase classname="tests.test_math" name="test_add"><failure message="assert 2 == 3">...</failure></testcase>
  <testcase classname="tests.test_math" name="test_sub"/>
  <testcase classname="tests.test_math" name="test_div"><skipped message="not yet"/></testcase>
</testsuite></testsuites>`)

	r, err := junit.Summarize([]junit.File{{Name: "reports/pytest.xml", Data: report}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(junit.Text(r))
	// Output:
	// tests: 1 passed, 1 failed, 1 skipped, 0 errors
	// FAIL tests.test_math.test_add: assert 2 == 3
}
