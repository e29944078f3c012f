package api

import _ "embed"

// OpenAPI is the document, as a node serves it at /v1/openapi.json.
//
//go:embed openapi.json
var OpenAPI []byte
