package newznab

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hostguard/hostguard/feed"
)

// ErrInvalid is matched (with errors.Is) by every *InputError: a bad
// Config or SearchParams value, refused before any request.
var ErrInvalid = errors.New("newznab: invalid input")

// InputError is bad input to New or Search. Field is the input's name as
// the daemon's configuration spells it ("url", "max_response_bytes",
// "categories[2]", "offset"). It matches ErrInvalid. Its text never quotes
// a URL or a key.
type InputError struct {
	Field, Reason string
}

func (e *InputError) Error() string {
	if e.Field == "" {
		return "newznab: " + e.Reason
	}
	return "newznab: " + e.Field + ": " + e.Reason
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InputError) Is(target error) bool { return target == ErrInvalid }

// InputField returns Field and Reason, so that the daemon finds this
// package's input errors like every other package's.
func (e *InputError) InputField() (field, reason string) { return e.Field, e.Reason }

// Conditions an indexer reports with an error document. *Error matches
// exactly one of them.
var (
	// ErrBadCredentials: the key is wrong, the account suspended or not
	// allowed to use the API (codes 100-199).
	ErrBadCredentials = errors.New("newznab: the indexer refused the credentials")
	// ErrAPILimit: the account's request limit is reached (code 500 or
	// 429, or a description that says a request, API or query limit is
	// reached). It also matches feed.ErrSourceExhausted.
	ErrAPILimit = errors.New("newznab: the indexer's API request limit is reached")
	// ErrDownloadLimit: the account's download (grab) limit is reached
	// (code 501, or a description naming a grab or download limit).
	// Searches may still work.
	ErrDownloadLimit = errors.New("newznab: the indexer's download limit is reached")
	// ErrDisabled: the indexer or its API is disabled (code 910, or a
	// description that says "disabled", as proxies answer for an indexer
	// they switched off). When the indexer says until when (Error.Until),
	// the refusal is temporary and also matches feed.ErrSourceExhausted.
	ErrDisabled = errors.New("newznab: the indexer's API is disabled")
	// ErrRequest: the indexer did not accept the request: a missing or bad
	// parameter, or a function it lacks (codes 200-299).
	ErrRequest = errors.New("newznab: the indexer rejected the request")
	// ErrUnknown: any other error document.
	ErrUnknown = errors.New("newznab: the indexer reported an error")
)

// maxRetryAfter bounds how far ahead an indexer's "try again at" is
// believed, so that a bogus header or a misread date cannot silence a feed
// for longer than a week.
const maxRetryAfter = 7 * 24 * time.Hour

// Error is an error document from the indexer (XML <error code
// description/>, or the same in JSON), under whatever HTTP status it came.
type Error struct {
	Code        int
	Description string // as sent, with any echo of the API key masked
	// Status is the HTTP status the document came with: 200 for most
	// indexers, 429 or 410 from proxies such as Prowlarr.
	Status int
	// Until is when the indexer says it will serve again: from the
	// Retry-After header (seconds or an HTTP date), else from a
	// description such as "disabled till <time>" (a time without a zone
	// is read as UTC). Zero when it did not say, or said a time in the
	// past; at most a week ahead.
	Until time.Time
	kind  error
}

// classify maps an error document to its condition. The description is
// read as well as the code, because proxies in front of indexers use the
// codes loosely (Prowlarr answers 429 both for its own query limit and for
// an indexer it disabled after failures).
func classify(code int, description string) error {
	d := strings.ToLower(description)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(d, w) {
				return true
			}
		}
		return false
	}
	switch {
	case code >= 100 && code <= 199:
		return ErrBadCredentials
	case code == 910 || has("disabled"):
		return ErrDisabled
	case code == 501 || has("grab limit", "download limit"):
		return ErrDownloadLimit
	case code == 500 || code == 429 || has("request limit", "api limit", "query limit", "limit reached", "too many requests"):
		return ErrAPILimit
	case code >= 200 && code <= 299:
		return ErrRequest
	}
	return ErrUnknown
}

func newError(code int, description string) *Error {
	return &Error{Code: code, Description: description, kind: classify(code, description)}
}

func (e *Error) Error() string {
	// The client always wraps an Error with the package prefix and the
	// request, so the text starts with the meaning.
	s := fmt.Sprintf("%s (indexer error %d: %s", strings.TrimPrefix(e.kind.Error(), "newznab: "), e.Code, e.Description)
	if e.Status != 0 && e.Status != http.StatusOK {
		s += fmt.Sprintf("; HTTP %d", e.Status)
	}
	if !e.Until.IsZero() {
		s += "; retry at " + e.Until.UTC().Format(time.RFC3339)
	}
	return s + ")"
}

// Is makes errors.Is match the condition's sentinel, and
// feed.ErrSourceExhausted for the source's own refusals: ErrAPILimit, and
// ErrDisabled with an Until time.
func (e *Error) Is(target error) bool {
	if target == e.kind {
		return true
	}
	return target == feed.ErrSourceExhausted && e.Temporary()
}

// Temporary reports whether the indexer refused for now rather than for
// good: its request limit, or a refusal that says until when.
func (e *Error) Temporary() bool {
	return e.kind == ErrAPILimit || (e.kind == ErrDisabled && !e.Until.IsZero())
}

// RetryAt is Until, for callers (such as feed.Loop) that cannot name this
// type: it implements feed.RetryAter.
func (e *Error) RetryAt() time.Time { return e.Until }

// StatusError is an HTTP error status that came without an error document.
// A 429 (too many requests) with a Retry-After matches
// feed.ErrSourceExhausted.
type StatusError struct {
	Status int
	// Until is the Retry-After header's time, zero without one.
	Until time.Time
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("the indexer answered HTTP %d %s", e.Status, http.StatusText(e.Status))
	if !e.Until.IsZero() {
		s += "; retry at " + e.Until.UTC().Format(time.RFC3339)
	}
	return s
}

// Is makes a 429 that says when to retry match feed.ErrSourceExhausted:
// the source's own refusal, until then. One that does not say is a
// failure, retried after the caller's back-off rather than closing the
// source for the day.
func (e *StatusError) Is(target error) bool {
	return target == feed.ErrSourceExhausted && e.Status == http.StatusTooManyRequests && !e.Until.IsZero()
}

// RetryAt is Until: it implements feed.RetryAter.
func (e *StatusError) RetryAt() time.Time { return e.Until }

// disabledUntil reads the time out of a description such as "Indexer is
// disabled till 12/1/2026 8:30:00 PM due to recent failures." Proxies
// write it in their host's local time and culture; it is read as UTC in
// the few spellings seen (month first with slashes, day first with dots,
// ISO, RFC 1123). The zero time when there is none.
func disabledUntil(description string) time.Time {
	lower := strings.ToLower(description)
	i := strings.Index(lower, "disabled")
	if i < 0 {
		return time.Time{}
	}
	rest, lrest := description[i:], lower[i:]
	j := -1
	for _, w := range []string{" till ", " until "} {
		if k := strings.Index(lrest, w); k >= 0 {
			j = k + len(w)
			break
		}
	}
	if j < 0 {
		return time.Time{}
	}
	when := rest[j:]
	if k := strings.Index(lrest[j:], " due "); k >= 0 {
		when = when[:k]
	}
	when = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(when), "."))
	for _, l := range []string{"1/2/2006 3:04:05 PM", "1/2/2006 15:04:05", "2.1.2006 15:04:05", "2.1.2006 15:04"} {
		if t, err := time.Parse(l, when); err == nil {
			return t.UTC()
		}
	}
	if t, ok := parseDate(when); ok {
		return t
	}
	return time.Time{}
}

// settle fills in what only the response can tell: the HTTP status, and
// until when the indexer refuses (a Retry-After header before a time in
// the description, since the header is computed from the proxy's own
// clock and zone).
func (e *Error) settle(status int, retryHeader string, now time.Time) {
	e.Status = status
	e.Until = retryAfter(retryHeader, now)
	if e.Until.IsZero() {
		if t := disabledUntil(e.Description); t.After(now) {
			e.Until = t
		}
	}
	if limit := now.Add(maxRetryAfter); e.Until.After(limit) {
		e.Until = limit
	}
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

// RedirectError is a redirect the client refused to follow: to another
// origin than the indexer's, or one too many within it. To is where the
// indexer pointed, without user:password or query.
type RedirectError struct {
	To      string
	Origin  string // the indexer's origin, scheme://host:port
	TooMany bool   // within the origin, past MaxRedirects
}

func (e *RedirectError) Error() string {
	if e.TooMany {
		return fmt.Sprintf("the indexer redirected more than %d times (last to %s)", MaxRedirects, e.To)
	}
	return "the indexer redirected to " + e.To + ", outside " + e.Origin +
		"; redirects are followed only within the configured origin, so set the feed's URL to where the indexer now answers"
}
