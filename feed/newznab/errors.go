package newznab

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/hostguard/hostguard/feed"
)

// Conditions an indexer reports with an error document. *Error matches
// exactly one of them.
var (
	// ErrBadCredentials: the key is wrong, the account suspended or not
	// allowed to use the API (codes 100-199).
	ErrBadCredentials = errors.New("newznab: the indexer refused the credentials")
	// ErrAPILimit: the account's request limit is reached (code 500, or a
	// description saying so). It also matches feed.ErrSourceExhausted.
	ErrAPILimit = errors.New("newznab: the indexer's API request limit is reached")
	// ErrDownloadLimit: the account's download (grab) limit is reached
	// (code 501). Searches may still work.
	ErrDownloadLimit = errors.New("newznab: the indexer's download limit is reached")
	// ErrDisabled: the indexer's API is disabled (code 910).
	ErrDisabled = errors.New("newznab: the indexer's API is disabled")
	// ErrRequest: the indexer did not accept the request: a missing or bad
	// parameter, or a function it lacks (codes 200-299).
	ErrRequest = errors.New("newznab: the indexer rejected the request")
	// ErrUnknown: any other error document.
	ErrUnknown = errors.New("newznab: the indexer reported an error")
)

// Error is an error document from the indexer.
type Error struct {
	Code        int
	Description string // as sent, with any echo of the API key masked
	kind        error
}

func newError(code int, description string) *Error {
	e := &Error{Code: code, Description: description}
	d := strings.ToLower(description)
	switch {
	case code >= 100 && code <= 199:
		e.kind = ErrBadCredentials
	case code == 500 || strings.Contains(d, "request limit reached") || strings.Contains(d, "api limit reached"):
		e.kind = ErrAPILimit
	case code == 501 || strings.Contains(d, "download limit reached"):
		e.kind = ErrDownloadLimit
	case code == 910:
		e.kind = ErrDisabled
	case code >= 200 && code <= 299:
		e.kind = ErrRequest
	default:
		e.kind = ErrUnknown
	}
	return e
}

func (e *Error) Error() string {
	// The client always wraps an Error with the package prefix and the
	// request, so the text starts with the meaning.
	return fmt.Sprintf("%s (indexer error %d: %s)", strings.TrimPrefix(e.kind.Error(), "newznab: "), e.Code, e.Description)
}

// Is makes errors.Is match the condition's sentinel, and
// feed.ErrSourceExhausted for ErrAPILimit.
func (e *Error) Is(target error) bool {
	return target == e.kind || (e.kind == ErrAPILimit && target == feed.ErrSourceExhausted)
}

// StatusError is an HTTP error status that came without an error document.
type StatusError struct {
	Status int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("the indexer answered HTTP %d %s", e.Status, http.StatusText(e.Status))
}

// masked hides every occurrence of the API key in an error's text while
// keeping the error chain intact for errors.Is and errors.As.
type masked struct {
	err error
	key string
}

func (m *masked) Error() string { return maskKey(m.err.Error(), m.key) }
func (m *masked) Unwrap() error { return m.err }

func maskKey(s, key string) string {
	if key == "" {
		return s
	}
	s = strings.ReplaceAll(s, key, "[key]")
	// The key may also come back URL-escaped.
	if esc := url.QueryEscape(key); esc != key {
		s = strings.ReplaceAll(s, esc, "[key]")
	}
	return s
}
