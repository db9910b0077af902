// Package docs embeds the API reference so the binary serves the document it was built with.
package docs

import _ "embed"

// OpenAPI is docs/openapi.yaml, the API reference (OpenAPI 3.1).
//
//go:embed openapi.yaml
var OpenAPI []byte
