package server

import (
	_ "embed"
	"net/http"
)

// openAPIDocument is docs/openapi.yaml as JSON. It is generated (see
// e2e/openapi, whose test fails when it is stale), so the daemon needs no
// YAML parser to serve it.
//
//go:embed openapi.json
var openAPIDocument []byte

// openAPI is GET /v1/openapi.json: the API's own description.
func (s *Server) openAPI(w http.ResponseWriter, _ *http.Request) error {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(openAPIDocument)
	return nil
}
