package server

import (
	"net/http"
	"net/url"
	"regexp"

	"github.com/hostguard/hostguard/internal/inputtext"
)

var wildcard = regexp.MustCompile(`\{([a-z_]+)(\.\.\.)?\}`)

// strictInput refuses, before the handler runs, a path segment or query
// parameter holding a NUL byte, text that is not valid UTF-8 or a control
// character, naming it: the route's own name for the segment ("name",
// "id"), the parameter's for the query. The stores differ on such bytes
// (PostgreSQL refuses them, SQLite keeps them) and a percent-decoder would
// otherwise hand a handler bytes it then stores as something else, so the
// refusal is made once here, identically whatever the engine.
func strictInput(pattern string, h handlerFunc) handlerFunc {
	var names []string
	for _, m := range wildcard.FindAllStringSubmatch(pattern, -1) {
		names = append(names, m[1])
	}
	return func(w http.ResponseWriter, r *http.Request) error {
		for _, n := range names {
			if err := inputtext.Check(r.PathValue(n)); err != nil {
				return badRequest(n, "%s %s", n, err)
			}
		}
		if r.URL.RawQuery != "" {
			q, err := url.ParseQuery(r.URL.RawQuery)
			if err != nil {
				return badRequest("", "the query string is malformed: %s", "percent-encode every parameter")
			}
			for k, vv := range q {
				if err := inputtext.Check(k); err != nil {
					return badRequest("", "a query parameter's name %s", err)
				}
				for _, v := range vv {
					if err := inputtext.Check(v); err != nil {
						return badRequest(k, "%s %s", k, err)
					}
				}
			}
		}
		return h(w, r)
	}
}
