package strictjson

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	numberType          = reflect.TypeFor[json.Number]()
)

// walker checks a document against a Go type without building anything.
// A nil type stands for "any value", which is still checked for syntax,
// duplicate keys and UTF-8.
type walker struct {
	data []byte
	pos  int
	root string // the path given to DecodeAt
	segs []seg
}

func (w *walker) skipSpace() {
	for w.pos < len(w.data) {
		switch w.data[w.pos] {
		case ' ', '\t', '\n', '\r':
			w.pos++
		default:
			return
		}
	}
}

func (w *walker) syntax(format string, args ...any) *Error {
	return &Error{Syntax: true, Offset: int64(w.pos), Reason: fmt.Sprintf(format, args...)}
}

func (w *walker) bad(off int, format string, args ...any) *Error {
	return &Error{Path: w.path(), Offset: int64(off), Reason: fmt.Sprintf(format, args...)}
}

// seg is one step of the path to the value being checked: a member's key,
// or an element's index when key is empty and index is not negative.
type seg struct {
	key   string
	index int
}

// path spells the current position as items[3].id. It is built only for
// an error: building it for every value would make deep documents cost
// quadratic time.
func (w *walker) path() string {
	p := w.root
	for _, s := range w.segs {
		if s.index >= 0 {
			p += "[" + strconv.Itoa(s.index) + "]"
		} else {
			p = member(p, s.key)
		}
	}
	return p
}

// kindAt names the JSON value starting at the current position as a
// message says it: "string", "number", "null".
func (w *walker) kindAt() string {
	switch c := w.data[w.pos]; {
	case c == '"':
		return "string"
	case c == '{':
		return "object"
	case c == '[':
		return "array"
	case c == 't':
		return "true"
	case c == 'f':
		return "false"
	case c == 'n':
		return "null"
	}
	return "number"
}

// want names what a Go type accepts, as a JSON client thinks of it.
func want(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "a JSON object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a JSON value"
}

// value checks the value at the current position against t.
func (w *walker) value(t reflect.Type, depth int) *Error {
	w.skipSpace()
	if w.pos == len(w.data) {
		return w.syntax("unexpected end of JSON input")
	}
	if depth > MaxDepth {
		return w.bad(w.pos, "nests more than %d levels deep", MaxDepth)
	}
	if t == nil {
		return w.anyValue(depth)
	}
	isNull := w.data[w.pos] == 'n'
	if t.Kind() == reflect.Pointer {
		if isNull {
			return w.literal("null")
		}
		return w.value(t.Elem(), depth)
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return w.unmarshaler(t, depth)
	}
	if reflect.PointerTo(t).Implements(textUnmarshalerType) && w.data[w.pos] == '"' {
		return w.text(t)
	}
	if isNull {
		// null leaves a scalar, slice or map as it was, which is what
		// leaving the field out does; only an object that is required
		// cannot be null.
		if t.Kind() == reflect.Struct {
			return w.bad(w.pos, "must be %s, not null", want(t))
		}
		return w.literal("null")
	}
	c := w.data[w.pos]
	switch t.Kind() {
	case reflect.Struct:
		if c == '{' {
			return w.object(depth, structMembers(t))
		}
	case reflect.Map:
		if c == '{' {
			return w.object(depth, mapMembers(t))
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !reflect.PointerTo(t.Elem()).Implements(unmarshalerType) &&
			!reflect.PointerTo(t.Elem()).Implements(textUnmarshalerType) {
			return w.bytes(t)
		}
		if c == '[' {
			return w.array(t.Elem(), -1, depth)
		}
	case reflect.Array:
		if c == '[' {
			return w.array(t.Elem(), t.Len(), depth)
		}
	case reflect.Interface:
		if t.NumMethod() == 0 {
			return w.anyValue(depth)
		}
	case reflect.String:
		if t == numberType && w.kindAt() == "number" {
			_, err := w.number()
			return err
		}
		if c == '"' {
			_, err := w.str(false)
			return err
		}
	case reflect.Bool:
		switch c {
		case 't':
			return w.literal("true")
		case 'f':
			return w.literal("false")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		if w.kindAt() == "number" {
			return w.numberOf(t)
		}
	}
	return w.mismatch(t)
}

// mismatch reports a value of the wrong kind, after checking that the
// value is at least well-formed: a syntax error is the better message.
func (w *walker) mismatch(t reflect.Type) *Error {
	start, got, segs := w.pos, w.kindAt(), len(w.segs)
	if err := w.anyValue(0); err != nil && err.Syntax {
		return err
	}
	w.segs = w.segs[:segs]
	return w.bad(start, "must be %s, not %s", want(t), got)
}

func (w *walker) literal(word string) *Error {
	if !strings.HasPrefix(string(w.data[w.pos:min(len(w.data), w.pos+len(word))]), word) {
		if len(w.data)-w.pos < len(word) && strings.HasPrefix(word, string(w.data[w.pos:])) {
			w.pos = len(w.data)
			return w.syntax("unexpected end of JSON input")
		}
		return w.syntax("invalid character %s looking for the start of a value", quoteByte(w.data[w.pos]))
	}
	w.pos += len(word)
	return nil
}

func quoteByte(c byte) string {
	if c < 0x20 || c >= 0x7f {
		return fmt.Sprintf("byte 0x%02x", c)
	}
	return strconv.QuoteRune(rune(c))
}

// anyValue checks a value of any kind.
func (w *walker) anyValue(depth int) *Error {
	w.skipSpace()
	if w.pos == len(w.data) {
		return w.syntax("unexpected end of JSON input")
	}
	if depth > MaxDepth {
		return w.bad(w.pos, "nests more than %d levels deep", MaxDepth)
	}
	switch c := w.data[w.pos]; {
	case c == '{':
		return w.object(depth, anyMembers{})
	case c == '[':
		return w.array(nil, -1, depth)
	case c == '"':
		_, err := w.str(false)
		return err
	case c == 't':
		return w.literal("true")
	case c == 'f':
		return w.literal("false")
	case c == 'n':
		return w.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		_, err := w.number()
		return err
	}
	return w.syntax("invalid character %s looking for the start of a value", quoteByte(w.data[w.pos]))
}

// members is what an object may hold: a struct's fields, a map's keys, or
// anything.
type members interface {
	// lookup returns the type of key's value and an id under which
	// duplicates are recognised, or a reason the key is refused.
	lookup(key string) (t reflect.Type, id string, reason string)
}

type anyMembers struct{}

func (anyMembers) lookup(key string) (reflect.Type, string, string) { return nil, key, "" }

func (w *walker) object(depth int, m members) *Error {
	w.pos++ // '{'
	var seen keySet
	w.skipSpace()
	if w.pos < len(w.data) && w.data[w.pos] == '}' {
		w.pos++
		return nil
	}
	for {
		w.skipSpace()
		if w.pos == len(w.data) {
			return w.syntax("unexpected end of JSON input")
		}
		if w.data[w.pos] != '"' {
			return w.syntax("invalid character %s looking for the start of an object key", quoteByte(w.data[w.pos]))
		}
		keyAt := w.pos
		key, err := w.str(true)
		if err != nil {
			if !err.Syntax {
				err.Reason = "has a key that " + err.Reason
			}
			return err
		}
		t, id, reason := m.lookup(key)
		w.segs = append(w.segs, seg{key: key, index: -1})
		if reason != "" {
			return w.bad(keyAt, "%s", reason)
		}
		if seen.add(id) {
			return w.bad(keyAt, "duplicate key")
		}
		w.skipSpace()
		if w.pos == len(w.data) {
			return w.syntax("unexpected end of JSON input")
		}
		if w.data[w.pos] != ':' {
			return w.syntax("invalid character %s after an object key", quoteByte(w.data[w.pos]))
		}
		w.pos++
		if err := w.value(t, depth+1); err != nil {
			return err
		}
		w.segs = w.segs[:len(w.segs)-1]
		w.skipSpace()
		if w.pos == len(w.data) {
			return w.syntax("unexpected end of JSON input")
		}
		switch w.data[w.pos] {
		case ',':
			w.pos++
		case '}':
			w.pos++
			return nil
		default:
			return w.syntax("invalid character %s after an object member", quoteByte(w.data[w.pos]))
		}
	}
}

// keySet remembers an object's keys: a slice while they are few, which
// costs nothing for the usual small request, and a map once they are many,
// so that an object of a hundred thousand keys costs linear time.
type keySet struct {
	few  []string
	many map[string]struct{}
}

// add records key and reports whether it was there already.
func (k *keySet) add(key string) bool {
	if k.many != nil {
		if _, dup := k.many[key]; dup {
			return true
		}
		k.many[key] = struct{}{}
		return false
	}
	for _, s := range k.few {
		if s == key {
			return true
		}
	}
	k.few = append(k.few, key)
	if len(k.few) > 16 {
		k.many = make(map[string]struct{}, 2*len(k.few))
		for _, s := range k.few {
			k.many[s] = struct{}{}
		}
	}
	return false
}

// array checks an array of elem (nil: anything) holding at most limit
// values (negative: any number).
func (w *walker) array(elem reflect.Type, limit int, depth int) *Error {
	w.pos++ // '['
	w.skipSpace()
	if w.pos < len(w.data) && w.data[w.pos] == ']' {
		w.pos++
		return nil
	}
	w.segs = append(w.segs, seg{index: 0})
	last := len(w.segs) - 1
	for i := 0; ; i++ {
		w.segs[last].index = i
		if limit >= 0 && i >= limit {
			w.skipSpace()
			return w.bad(w.pos, "is one too many: the array holds at most %d values", limit)
		}
		if err := w.value(elem, depth+1); err != nil {
			return err
		}
		w.skipSpace()
		if w.pos == len(w.data) {
			return w.syntax("unexpected end of JSON input")
		}
		switch w.data[w.pos] {
		case ',':
			w.pos++
		case ']':
			w.pos++
			w.segs = w.segs[:last]
			return nil
		default:
			return w.syntax("invalid character %s after an array value", quoteByte(w.data[w.pos]))
		}
	}
}

// str reads a string literal, refusing what cannot be read back as
// written: invalid UTF-8 and unpaired surrogate escapes. The decoded text
// is built only when keep is set.
func (w *walker) str(keep bool) (string, *Error) {
	w.pos++ // '"'
	var b []byte
	if keep {
		b = make([]byte, 0, 16)
	}
	for {
		if w.pos >= len(w.data) {
			return "", w.syntax("unexpected end of JSON input")
		}
		c := w.data[w.pos]
		switch {
		case c == '"':
			w.pos++
			return string(b), nil
		case c < 0x20:
			return "", w.syntax("invalid character %s in a string literal", quoteByte(c))
		case c == '\\':
			r, err := w.escape()
			if err != nil {
				return "", err
			}
			if keep {
				b = utf8.AppendRune(b, r)
			}
		case c < utf8.RuneSelf:
			if keep {
				b = append(b, c)
			}
			w.pos++
		default:
			r, size := utf8.DecodeRune(w.data[w.pos:])
			if r == utf8.RuneError && size <= 1 {
				return "", w.bad(w.pos, "is not valid UTF-8 (byte 0x%02x)", c)
			}
			if keep {
				b = append(b, w.data[w.pos:w.pos+size]...)
			}
			w.pos += size
		}
	}
}

// escape reads one escape sequence, a surrogate pair counting as one.
func (w *walker) escape() (rune, *Error) {
	at := w.pos
	if w.pos+1 >= len(w.data) {
		w.pos = len(w.data)
		return 0, w.syntax("unexpected end of JSON input")
	}
	w.pos++
	c := w.data[w.pos]
	w.pos++
	switch c {
	case '"', '\\', '/':
		return rune(c), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
	default:
		w.pos--
		return 0, w.syntax("invalid escape character %s in a string literal", quoteByte(c))
	}
	r, err := w.hex4()
	if err != nil {
		return 0, err
	}
	switch {
	case utf16.IsSurrogate(r) && r < 0xdc00:
		if w.pos+1 < len(w.data) && w.data[w.pos] == '\\' && w.data[w.pos+1] == 'u' {
			w.pos += 2
			r2, err := w.hex4()
			if err != nil {
				return 0, err
			}
			if p := utf16.DecodeRune(r, r2); p != utf8.RuneError {
				return p, nil
			}
		}
		return 0, w.bad(at, "is not valid UTF-8 (unpaired surrogate \\u%04x)", r)
	case utf16.IsSurrogate(r):
		return 0, w.bad(at, "is not valid UTF-8 (unpaired surrogate \\u%04x)", r)
	}
	return r, nil
}

func (w *walker) hex4() (rune, *Error) {
	if len(w.data)-w.pos < 4 {
		for ; w.pos < len(w.data); w.pos++ {
			if !isHex(w.data[w.pos]) {
				return 0, w.syntax("invalid character %s in a \\u escape", quoteByte(w.data[w.pos]))
			}
		}
		return 0, w.syntax("unexpected end of JSON input")
	}
	var r rune
	for range 4 {
		c := w.data[w.pos]
		if !isHex(c) {
			return 0, w.syntax("invalid character %s in a \\u escape", quoteByte(c))
		}
		r = r<<4 | unhex(c)
		w.pos++
	}
	return r, nil
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func unhex(c byte) rune {
	switch {
	case c <= '9':
		return rune(c - '0')
	case c >= 'a':
		return rune(c-'a') + 10
	}
	return rune(c-'A') + 10
}

// number reads a number literal as JSON's grammar spells it.
func (w *walker) number() (string, *Error) {
	start := w.pos
	digits := func() bool {
		n := 0
		for w.pos < len(w.data) && '0' <= w.data[w.pos] && w.data[w.pos] <= '9' {
			w.pos++
			n++
		}
		return n > 0
	}
	end := func(what string) *Error {
		if w.pos == len(w.data) {
			return w.syntax("unexpected end of JSON input")
		}
		return w.syntax("invalid character %s %s", quoteByte(w.data[w.pos]), what)
	}
	if w.data[w.pos] == '-' {
		w.pos++
	}
	switch {
	case w.pos < len(w.data) && w.data[w.pos] == '0':
		w.pos++
	case !digits():
		return "", end("in numeric literal")
	}
	if w.pos < len(w.data) && w.data[w.pos] == '.' {
		w.pos++
		if !digits() {
			return "", end("after decimal point in numeric literal")
		}
	}
	if w.pos < len(w.data) && (w.data[w.pos] == 'e' || w.data[w.pos] == 'E') {
		w.pos++
		if w.pos < len(w.data) && (w.data[w.pos] == '+' || w.data[w.pos] == '-') {
			w.pos++
		}
		if !digits() {
			return "", end("in exponent of numeric literal")
		}
	}
	return string(w.data[start:w.pos]), nil
}

// numberOf checks that a number fits t as encoding/json would store it.
func (w *walker) numberOf(t reflect.Type) *Error {
	start := w.pos
	lit, err := w.number()
	if err != nil {
		return err
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		if _, perr := strconv.ParseFloat(lit, t.Bits()); perr != nil {
			return w.bad(start, "must be a number within range, not %s", lit)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if _, perr := strconv.ParseInt(lit, 10, t.Bits()); perr != nil {
			if errors.Is(perr, strconv.ErrRange) {
				lo, hi := -int64(1)<<(t.Bits()-1), int64(1)<<(t.Bits()-1)-1
				return w.bad(start, "must be a number from %d to %d, not %s", lo, hi, lit)
			}
			return w.bad(start, "must be a whole number, not %s", lit)
		}
	default:
		if _, perr := strconv.ParseUint(lit, 10, t.Bits()); perr != nil {
			if errors.Is(perr, strconv.ErrRange) || strings.HasPrefix(lit, "-") && !strings.ContainsAny(lit, ".eE") {
				return w.bad(start, "must be a number from 0 to %d, not %s", uint64(math.MaxUint64)>>(64-t.Bits()), lit)
			}
			return w.bad(start, "must be a whole number, not %s", lit)
		}
	}
	return nil
}

// bytes checks a []byte, which JSON carries as a base64 string.
func (w *walker) bytes(t reflect.Type) *Error {
	if w.data[w.pos] != '"' {
		return w.mismatch(t)
	}
	start := w.pos
	s, err := w.str(true)
	if err != nil {
		return err
	}
	if _, derr := base64.StdEncoding.DecodeString(s); derr != nil {
		return w.bad(start, "must be base64, as standard encoding writes it")
	}
	return nil
}

// unmarshaler checks a value whose type decodes itself, by asking it.
func (w *walker) unmarshaler(t reflect.Type, depth int) *Error {
	start := w.pos
	if err := w.anyValue(depth); err != nil {
		return err
	}
	u := reflect.New(t).Interface().(json.Unmarshaler)
	if err := u.UnmarshalJSON(w.data[start:w.pos]); err != nil {
		return w.bad(start, "%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// text checks a string whose type decodes itself from text.
func (w *walker) text(t reflect.Type) *Error {
	start := w.pos
	s, err := w.str(true)
	if err != nil {
		return err
	}
	u := reflect.New(t).Interface().(encoding.TextUnmarshaler)
	if err := u.UnmarshalText([]byte(s)); err != nil {
		return w.bad(start, "%s", err.Error())
	}
	return nil
}
