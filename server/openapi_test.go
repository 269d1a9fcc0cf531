package server

import (
	"bytes"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/executor"
)

// loadOpenAPI parses the embedded document and validates it as OpenAPI 3.
func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(openAPIDocument)
	if err != nil {
		t.Fatalf("load openapi.json: %v", err)
	}
	if err := doc.Validate(t.Context()); err != nil {
		t.Fatalf("openapi.json is not a valid OpenAPI 3 document: %v", err)
	}
	return doc
}

func TestOpenAPIValid(t *testing.T) {
	doc := loadOpenAPI(t)
	if doc.OpenAPI != "3.0.3" {
		t.Errorf("openapi = %q, want 3.0.3", doc.OpenAPI)
	}
}

// TestOpenAPIRoutes compares the document's operations with the registered
// routes both ways, and checks which ones need a token.
func TestOpenAPIRoutes(t *testing.T) {
	doc := loadOpenAPI(t)

	// Routes served outside the routes table (see Handler), with whether they are public.
	want := map[string]bool{
		"GET /metrics": true,
		"POST /mcp":    false,
		"GET /mcp":     false,
		"DELETE /mcp":  false,
	}
	for _, rt := range routes {
		// OpenAPI has no "rest of the path" parameter: {path...} is {path} there.
		want[rt.method+" "+strings.ReplaceAll(rt.path, "...}", "}")] = rt.public
	}

	got := map[string]*openapi3.Operation{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			got[strings.ToUpper(method)+" "+path] = op
		}
	}

	for key := range want {
		if got[key] == nil {
			t.Errorf("route %s is missing from openapi.json", key)
		}
	}
	for key := range got {
		if _, ok := want[key]; !ok {
			t.Errorf("openapi.json lists %s, which is not a registered route", key)
		}
	}

	if len(doc.Security) != 1 {
		t.Errorf("global security = %v, want the bearer scheme alone", doc.Security)
	} else if _, ok := doc.Security[0]["bearer"]; !ok {
		t.Errorf("global security = %v, want the bearer scheme", doc.Security)
	}
	for key, public := range want {
		op := got[key]
		if op == nil {
			continue
		}
		switch {
		case public && (op.Security == nil || len(*op.Security) != 0):
			t.Errorf("%s is public: want security: [] in openapi.json", key)
		case !public && op.Security != nil:
			t.Errorf("%s needs a token: want it to inherit the global security, got %v", key, *op.Security)
		}
		if !public && op.Responses.Status(http.StatusUnauthorized) == nil {
			t.Errorf("%s needs a token but documents no 401", key)
		}
	}
}

// TestOpenAPIStatuses checks the statuses the handlers answer with.
func TestOpenAPIStatuses(t *testing.T) {
	doc := loadOpenAPI(t)
	for key, statuses := range map[string][]int{
		"POST /v1/processes":           {200, 202, 400, 401, 403, 413, 415, 429, 503},
		"GET /v1/processes":            {200, 400, 401, 403},
		"GET /v1/processes/{id}":       {200, 401, 403, 404, 503},
		"DELETE /v1/processes/{id}":    {204, 401, 403, 404, 409, 503},
		"GET /v1/processes/{id}/logs":  {200, 400, 401, 403, 404, 503},
		"POST /v1/processes/{id}/kill": {200, 400, 401, 403, 404, 413, 415, 503},
		"POST /v1/processes/{id}/wait": {200, 400, 401, 403, 404, 413, 415, 503},
		"POST /v1/check":               {200, 400, 401, 403, 413, 415},
		"GET /v1/nodes":                {200, 401, 403, 404, 503},
		"POST /v1/nodes/{id}/drain":    {200, 400, 401, 403, 404, 413, 415, 503},
		"GET /readyz":                  {200, 403, 503},
		"GET /healthz":                 {200, 403},
	} {
		method, path, _ := strings.Cut(key, " ")
		op := doc.Paths.Value(path).GetOperation(method)
		for _, status := range statuses {
			if op.Responses.Status(status) == nil {
				t.Errorf("%s: no %d response in openapi.json", key, status)
			}
		}
	}
	logs := doc.Paths.Value("/v1/processes/{id}/logs").Get.Responses.Status(200).Value
	for _, ct := range []string{"application/json", "text/event-stream"} {
		if logs.Content.Get(ct) == nil {
			t.Errorf("GET /v1/processes/{id}/logs: 200 has no %s content", ct)
		}
	}
	if doc.Paths.Value("/v1/processes").Post.Responses.Status(202).Value.Headers["Location"] == nil {
		t.Error("POST /v1/processes: 202 has no Location header")
	}
}

// TestOpenAPISchemas checks that the schemas name exactly the JSON fields of
// the Go types they describe.
func TestOpenAPISchemas(t *testing.T) {
	doc := loadOpenAPI(t)
	schemas := doc.Components.Schemas
	for name, v := range map[string]any{
		"Spec":          executor.Spec{},
		"Result":        executor.Result{},
		"ResourceUsage": executor.ResourceUsage{},
		"Process":       executor.Process{},
		"ProcessList":   executor.ProcessList{},
		"KillResult":    executor.KillResult{},
		"KillRequest":   api.KillRequest{},
		"WaitRequest":   api.WaitRequest{},
		"LogsResponse":  api.LogsResponse{},
		"CheckRequest":  api.CheckRequest{},
		"EndEvent":      api.LogsEnd{},
		"Error":         errorBody{},
		"WorkspaceSpec": api.WorkspaceSpec{},
		"Workspace":     api.Workspace{},
		"WorkspaceList": api.WorkspaceList{},
		"FileInfo":      api.FileInfo{},
		"FileList":      api.FileList{},
		"TestReport":    api.TestReport{},
		"EgressEntry":   api.EgressEntry{},
		"TestFailure":   api.TestFailure{},
		"Node":          api.Node{},
		"NodeList":      api.NodeList{},
		"DrainRequest":  api.DrainRequest{},
	} {
		checkFields(t, name, schemas[name], fieldNames(reflect.TypeOf(v)))
	}
	checkFields(t, "Decision", schemas["Decision"], fieldNames(reflect.TypeOf(api.CheckResult{})))
	// The body of the error shape is *Error.
	if e := schemas["Error"]; e != nil {
		checkFields(t, "Error.error", e.Value.Properties["error"], fieldNames(reflect.TypeOf(api.Error{})))
		// Its codes are the API's table, each with its status.
		code := e.Value.Properties["error"].Value.Properties["code"].Value.Description
		for _, k := range api.ErrorKinds {
			if !strings.Contains(code, "`"+k.Code+"`") {
				t.Errorf("Error.code's description does not name the code %q (%d)", k.Code, k.Status)
			}
		}
	}
	// The follow's events are maps built in followLogs.
	checkFields(t, "OpenEvent", schemas["OpenEvent"], []string{"id", "encoding"})
	checkFields(t, "LogChunk", schemas["LogChunk"], fieldNames(reflect.TypeOf(api.StreamChunk{})))

	var states []string
	for _, s := range api.States {
		states = append(states, string(s))
	}
	var enum []string
	if s := schemas["State"]; s != nil {
		for _, v := range s.Value.Enum {
			str, _ := v.(string)
			enum = append(enum, str)
		}
	}
	if !slices.Equal(enum, states) {
		t.Errorf("State enum = %v, want %v", enum, states)
	}
}

func checkFields(t *testing.T, name string, ref *openapi3.SchemaRef, want []string) {
	t.Helper()
	if ref == nil || ref.Value == nil {
		t.Errorf("schema %s is missing from openapi.json", name)
		return
	}
	var got []string
	for p := range ref.Value.Properties {
		got = append(got, p)
	}
	sort.Strings(got)
	want = slices.Clone(want)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("schema %s has properties %v; the Go type has %v", name, got, want)
	}
}

// fieldNames returns the JSON names of a struct's fields as encoding/json sees them.
func fieldNames(typ reflect.Type) []string {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	return slices.Sorted(maps.Keys(jsonFields(typ)))
}

func TestOpenAPIJSONFields(t *testing.T) {
	type inner struct {
		B int `json:"b,omitempty"`
		c int
	}
	type outer struct {
		inner
		A      string `json:"a"`
		Hidden string `json:"-"`
		Plain  bool
		d      int
	}
	got := fieldNames(reflect.TypeOf(outer{}))
	if want := []string{"Plain", "a", "b"}; !slices.Equal(got, want) {
		t.Errorf("jsonFields = %v, want %v", got, want)
	}
}

// TestOpenAPIServed checks that GET /openapi.json serves the embedded document.
func TestOpenAPIServed(t *testing.T) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/openapi.json", nil)
	if err := (&httpAPI{}).openapi(rec, req, ""); err != nil {
		t.Fatalf("openapi: %v", err)
	}
	if rec.Code != http.StatusOK {
		t.Errorf("status = %d, want 200", rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	if !bytes.Equal(rec.Body.Bytes(), openAPIDocument) {
		t.Errorf("served %d bytes that differ from the embedded document (%d bytes)", rec.Body.Len(), len(openAPIDocument))
	}
	if len(openAPIDocument) < 1000 {
		t.Errorf("the embedded document is %d bytes: still a placeholder?", len(openAPIDocument))
	}
}
