package api

import (
	"errors"
	"fmt"
	"testing"
)

// TestErrorKinds checks the table: codes are unique, each code's status and
// sentinel come back from ErrorOf and Unwrap, and the first kind of a
// sentinel is the one a server answers with.
func TestErrorKinds(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range ErrorKinds {
		if seen[k.Code] {
			t.Errorf("code %q is in the table twice", k.Code)
		}
		seen[k.Code] = true
		if k.Status < 400 {
			t.Errorf("code %q has status %d", k.Code, k.Status)
		}
		e := NewError(k.Code, "", "x")
		if e.Status != k.Status || !errors.Is(e, k.Sentinel) && k.Sentinel != nil || e.Unwrap() != k.Sentinel && k.Code != "engine_unavailable" {
			t.Errorf("NewError(%q) = %+v, unwraps to %v; want status %d and %v", k.Code, e, e.Unwrap(), k.Status, k.Sentinel)
		}
	}
	for _, tc := range []struct {
		err  error
		code string
	}{
		{fmt.Errorf("start: %w", ErrBusy), "busy"},
		{fmt.Errorf("run: %w", ErrQueueTimeout), "queue_timeout"},
		{&SpecError{Field: "memory", Reason: "too much"}, "invalid_request"},
		{fmt.Errorf("create: %w", ErrEngine), "engine_error"},
		{errors.New("something else"), "internal"},
	} {
		if e := ErrorOf(tc.err); e.Code != tc.code || e.Message != tc.err.Error() {
			t.Errorf("ErrorOf(%v) = %+v, want code %q", tc.err, e, tc.code)
		}
	}
	if e := ErrorOf(&SpecError{Field: "memory", Reason: "too much"}); e.Field != "memory" {
		t.Errorf("a SpecError's field: %+v", e)
	}
}
