// Package junit reads the JUnit XML reports a run wrote in its workspace and
// sums them up as an api.TestReport: how many test cases passed, failed, were
// skipped or errored, and which ones failed and why.
//
// The caller reads the files a report glob matched (at most MaxFiles, MaxBytes in
// all) and hands them to Summarize; Text renders the result for an agent to read.
// Parsing is the work of github.com/joshdk/go-junit, which knows the dialects of
// pytest, go-junit-report, jest-junit and Maven Surefire. Because the files come
// from the sandbox, this package bounds what the library is given and what comes
// out: a file whose shape would cost far more memory than its size is refused
// before the library sees it, and names, messages and lists are cut to fixed sizes.
//
// A file that is not JUnit XML does not fail the summary: a test runner killed at
// the run's timeout leaves a half-written report, and the other files still say
// what passed and failed. Such a file is listed in TestReport.Invalid with the
// reason. Only going over MaxFiles or MaxBytes is an error, because then the
// caller read more than it should have.
package junit
