// Package strictjson decodes JSON documents that people and programs write
// by hand (request bodies, the daemon's config file) and refuses, with the
// path of the value to blame, everything encoding/json lets through
// quietly: unknown fields, keys that differ from a known one only in case,
// duplicate keys, null where an object is required, trailing data, and
// strings that are not valid UTF-8 (raw bytes or escapes such as a lone
// surrogate, which encoding/json would turn into U+FFFD).
//
// Decode checks the document against the destination's type first and
// hands it to encoding/json only when it is acceptable, so encoding/json's
// tags, embedding rules and Unmarshaler methods keep their meaning.
package strictjson

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// MaxDepth bounds how deeply arrays and objects may nest, as encoding/json
// bounds it, so that a hostile document cannot exhaust the stack.
const MaxDepth = 10000

// Error is why a document was refused. Callers at a boundary turn it into
// their own message: Path is the field the user wrote and Reason reads after
// it ("items[3].id: must be a string, not number").
type Error struct {
	// Path locates the offending value as items[3].id or sources[2].share.
	// It is empty (or the path given to DecodeAt) when the document as a
	// whole is to blame: a syntax error, an empty document, a document that
	// is not an object.
	Path string

	// Reason says what is wrong, phrased to follow the path or a subject
	// such as "request body": "unknown field", "duplicate key",
	// "must be a JSON object, not null". For a syntax error it is the
	// detail, without the position.
	Reason string

	// Offset is the byte offset in the document, from 0, where the problem
	// was found.
	Offset int64

	// Syntax is true when the document is not well-formed JSON.
	Syntax bool
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	switch {
	case e.Syntax:
		fmt.Fprintf(&b, "malformed JSON at byte %d: %s", e.Offset, e.Reason)
	case e.Path == "":
		b.WriteString("document ")
		b.WriteString(e.Reason)
	default:
		b.WriteString(e.Reason)
	}
	return b.String()
}

// Decode decodes the single JSON value in data into dst, which must be a
// non-nil pointer (anything else is a programming error and panics). Every
// refusal is an *Error; dst is left unchanged when one is returned.
func Decode(data []byte, dst any) error { return DecodeAt("", data, dst) }

// DecodeAt is Decode for a part of a larger document found at path: every
// Error's Path starts with path, so a config file decoded section by
// section still names budget.sources[2].share.
func DecodeAt(path string, data []byte, dst any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic(fmt.Sprintf("strictjson: Decode needs a non-nil pointer, not %T", dst))
	}
	w := walker{data: data, root: path}
	w.skipSpace()
	if w.pos == len(data) {
		return &Error{Path: path, Reason: "is empty; want a JSON value", Offset: int64(w.pos)}
	}
	if err := w.value(rv.Type().Elem(), 0); err != nil {
		if err.Syntax {
			err.Path = path
		}
		return err
	}
	w.skipSpace()
	if w.pos != len(data) {
		// A second value, or garbage after the first, usually means a client
		// concatenated two documents; using the first would hide that.
		return &Error{Path: path, Reason: "has data after the JSON value", Offset: int64(w.pos)}
	}
	if err := json.Unmarshal(data, dst); err != nil {
		// The walk accepts only what encoding/json decodes, so this is a
		// gap in the walk; it is still refused, never half-applied quietly.
		return &Error{Path: path, Reason: strings.TrimPrefix(err.Error(), "json: ")}
	}
	return nil
}

// Join appends a field path to a prefix: Join("budget", "sources[2].share")
// is "budget.sources[2].share" and Join("items", "[3].id") is "items[3].id".
func Join(prefix, path string) string {
	switch {
	case prefix == "":
		return path
	case path == "":
		return prefix
	case path[0] == '[':
		return prefix + path
	}
	return prefix + "." + path
}

// Position turns a byte offset in data into a line and a column, both
// counted from 1, for messages about files.
func Position(data []byte, offset int64) (line, col int) {
	off := int(min(max(offset, 0), int64(len(data))))
	line = 1
	start := 0
	for i := range off {
		if data[i] == '\n' {
			line++
			start = i + 1
		}
	}
	return line, max(off-start, 0) + 1
}

// member names a map key or struct field within path.
func member(path, key string) string {
	if isIdent(key) {
		return Join(path, key)
	}
	return path + "[" + strconv.Quote(key) + "]"
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}
