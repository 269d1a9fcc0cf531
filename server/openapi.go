package server

import _ "embed"

// openAPIDocument describes every route of the API (OpenAPI 3); a test checks it
// against the registered routes and validates it with an OpenAPI library.
//
//go:embed openapi.json
var openAPIDocument []byte
