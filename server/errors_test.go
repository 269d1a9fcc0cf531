package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/client"
	"github.com/airlock-sandbox/airlock/internal/enginefake"
)

// TestErrorsOverHTTP sends every sentinel of the API's error table through a
// real HTTP server and the client: the status and code are the table's, and
// errors.Is holds on the client's side as it does in the server's.
func TestErrorsOverHTTP(t *testing.T) {
	h := newFakeHarness(t, enginefake.New(), nil)
	a := &httpAPI{svc: h.svc, log: h.svc.log, streams: t.Context()}
	var fail error
	mux := http.NewServeMux()
	mux.Handle("GET /v1/processes/{id}", a.wrap(route{"GET", "/v1/processes/{id}", false,
		func(*httpAPI, http.ResponseWriter, *http.Request, string) error { return fail }}))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	c, err := client.New(ts.URL, tokA)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range api.ErrorKinds {
		if k.Sentinel == nil || k.Code == "engine_unavailable" { // engine_unavailable: TestFakeEngineUnreachableIs503
			continue
		}
		t.Run(k.Code, func(t *testing.T) {
			fail = fmt.Errorf("the test's failure: %w", k.Sentinel)
			_, err := c.Get(t.Context(), "anything")
			var e *api.Error
			switch {
			case !errors.As(err, &e):
				t.Fatalf("err = %v, want an *api.Error", err)
			case e.Code != k.Code || e.Status != k.Status || e.Field != k.Field:
				t.Errorf("code %q status %d field %q, want %q %d %q", e.Code, e.Status, e.Field, k.Code, k.Status, k.Field)
			case !errors.Is(err, k.Sentinel):
				t.Errorf("errors.Is(err, the %q sentinel) is false over HTTP", k.Code)
			}
		})
	}
	// The server's context ending is cancelled, whichever way it ended.
	for _, cause := range []error{context.Canceled, context.DeadlineExceeded} {
		fail = fmt.Errorf("wait: %w", cause)
		if _, err := c.Get(t.Context(), "anything"); !errors.Is(err, api.ErrCancelled) || errors.Is(err, cause) {
			t.Errorf("the server's %v: client err %v, want ErrCancelled and not the client's own %v", cause, err, cause)
		}
	}
}
