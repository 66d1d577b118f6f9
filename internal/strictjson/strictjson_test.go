package strictjson_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hostguard/hostguard/internal/strictjson"
)

type item struct {
	ID       string  `json:"id"`
	Priority int8    `json:"priority"`
	Note     *string `json:"note"`
}

type inner struct {
	Share string `json:"share"`
}

type Embedded struct {
	Promoted bool `json:"promoted"`
}

type doc struct {
	Embedded
	URL     string            `json:"url"`
	Items   []item            `json:"items"`
	Sources []inner           `json:"sources"`
	Limits  map[string]uint16 `json:"limits"`
	Nested  inner             `json:"nested"`
	Opt     *inner            `json:"opt"`
	Any     any               `json:"any"`
	Raw     json.RawMessage   `json:"raw"`
	Ratio   float64           `json:"ratio"`
	Pair    [2]int            `json:"pair"`
	Blob    []byte            `json:"blob"`
	Skip    string            `json:"-"`
	Plain   string
}

func TestDecodeAccepts(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{}`,
		` {"url":"http://a"} `,
		`{"items":[{"id":"a","priority":-128},{"id":"b","note":null}]}`,
		`{"sources":[{"share":"gentle"}],"limits":{"a":65535}}`,
		`{"opt":null,"nested":{"share":"x"},"promoted":true}`,
		`{"any":{"a":[1,"x",null,true]},"raw":{"k":"v"},"ratio":1.5e3}`,
		`{"pair":[1,2],"blob":"aGk=","Plain":"p"}`,
		`{"url":"caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \b\f\n\r\t"}`,
		"{\"url\":\"\xe2\x82\xac\"}",
		`{"url":null,"items":null,"limits":null}`,
	} {
		var got, want doc
		if err := strictjson.Decode([]byte(body), &got); err != nil {
			t.Errorf("Decode(%s) = %v, want nil", body, err)
			continue
		}
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Decode(%s) = %+v, encoding/json gives %+v", body, got, want)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		path       string
		reason     string // a part of Reason
		syntax     bool
	}{
		{"null body", `null`, "", "must be a JSON object, not null", false},
		{"array body", `[]`, "", "must be a JSON object, not array", false},
		{"empty", "  ", "", "is empty", false},
		{"trailing data", `{} {}`, "", "has data after the JSON value", false},
		{"trailing garbage", `{"url":"a"}garbage`, "", "has data after the JSON value", false},
		{"unknown field", `{"urls":"a"}`, "urls", "unknown field", false},
		{"case variant", `{"URL":"a"}`, "URL", `did you mean "url"?`, false},
		{"case variant of promoted", `{"Promoted":true}`, "Promoted", `did you mean "promoted"?`, false},
		{"ignored field", `{"Skip":"a"}`, "Skip", "unknown field", false},
		{"duplicate key", `{"url":"a","url":"b"}`, "url", "duplicate key", false},
		{"duplicate map key", `{"limits":{"a":1,"a":2}}`, "limits.a", "duplicate key", false},
		{"duplicate key in any", `{"any":{"k":1,"k":2}}`, "any.k", "duplicate key", false},
		{"duplicate key in raw", `{"raw":{"k":1,"k":2}}`, "raw.k", "duplicate key", false},
		{"null nested object", `{"nested":null}`, "nested", "must be a JSON object, not null", false},
		{"null array element", `{"sources":[null]}`, "sources[0]", "must be a JSON object, not null", false},
		{"error inside an array", `{"items":[{"id":"a"},{"id":"b"},{"id":"c"},{"id":7}]}`, "items[3].id", "must be a string, not number", false},
		{"unknown inside an array", `{"sources":[{},{},{"shares":1}]}`, "sources[2].shares", "unknown field", false},
		{"wrong type", `{"url":5}`, "url", "must be a string, not number", false},
		{"bool for string", `{"url":true}`, "url", "must be a string, not true", false},
		{"object for array", `{"items":{}}`, "items", "must be an array, not object", false},
		{"string for number", `{"ratio":"1"}`, "ratio", "must be a number, not string", false},
		{"int range", `{"items":[{"priority":128}]}`, "items[0].priority", "from -128 to 127, not 128", false},
		{"uint range", `{"limits":{"a":65536}}`, "limits.a", "from 0 to 65535, not 65536", false},
		{"uint negative", `{"limits":{"a":-1}}`, "limits.a", "from 0 to 65535, not -1", false},
		{"fraction for int", `{"items":[{"priority":1.5}]}`, "items[0].priority", "must be a whole number, not 1.5", false},
		{"float range", `{"ratio":1e400}`, "ratio", "within range", false},
		{"array too long", `{"pair":[1,2,3]}`, "pair[2]", "at most 2 values", false},
		{"not base64", `{"blob":"!!"}`, "blob", "base64", false},
		{"odd map key", `{"limits":{"a b":1,"a b":2}}`, `limits["a b"]`, "duplicate key", false},
		{"raw invalid UTF-8", "{\"url\":\"a\xffb\"}", "url", "is not valid UTF-8", false},
		{"invalid UTF-8 in any", "{\"any\":[\"\xc0\xaf\"]}", "any[0]", "is not valid UTF-8", false},
		{"invalid UTF-8 in a key", "{\"u\xffrl\":1}", "", "has a key that is not valid UTF-8", false},
		{"lone low surrogate", `{"url":"\udc00"}`, "url", `unpaired surrogate \udc00`, false},
		{"lone high surrogate", `{"url":"x\ud800"}`, "url", `unpaired surrogate \ud800`, false},
		{"high then non-low", `{"url":"\ud800\u0041"}`, "url", `unpaired surrogate \ud800`, false},
		{"high then text", `{"url":"\ud83dx"}`, "url", `unpaired surrogate \ud83d`, false},
		{"surrogate in a key", `{"\udfff":1}`, "", "has a key that is not valid UTF-8", false},
		{"truncated", `{"url":`, "", "unexpected end", true},
		{"truncated string", `{"url":"ab`, "", "unexpected end", true},
		{"truncated literal", `{"opt":nu`, "", "unexpected end", true},
		{"bad literal", `{"opt":nul}`, "", "invalid character", true},
		{"trailing comma", `{"url":"a",}`, "", "invalid character '}'", true},
		{"missing comma", `{"url":"a" "Plain":"b"}`, "", "after an object member", true},
		{"bad escape", `{"url":"\x"}`, "", "invalid escape", true},
		{"short unicode escape", `{"url":"\u12"}`, "", `in a \u escape`, true},
		{"control character", "{\"url\":\"a\tb\"}", "", "in a string literal", true},
		{"leading zero", `{"ratio":01}`, "", "after an object member", true},
		{"bare minus", `{"ratio":-}`, "", "in numeric literal", true},
		{"syntax inside a mismatch", `{"url":[1,}`, "", "invalid character", true},
		{"single quotes", `{'url':1}`, "", "start of an object key", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var d doc
			err := strictjson.Decode([]byte(tc.body), &d)
			var e *strictjson.Error
			if !errors.As(err, &e) {
				t.Fatalf("Decode(%q) = %v, want a *strictjson.Error", tc.body, err)
			}
			if e.Path != tc.path || !strings.Contains(e.Reason, tc.reason) || e.Syntax != tc.syntax {
				t.Errorf("Decode(%q) = %#v, want path %q, syntax %v, reason with %q", tc.body, e, tc.path, tc.syntax, tc.reason)
			}
			if !reflect.DeepEqual(d, doc{}) {
				t.Errorf("Decode(%q) changed dst to %+v", tc.body, d)
			}
		})
	}
}

func TestDecodeAtPrefixesPaths(t *testing.T) {
	t.Parallel()
	var d doc
	err := strictjson.DecodeAt("budget", []byte(`{"sources":[{},{},{"share":1}]}`), &d)
	var e *strictjson.Error
	if !errors.As(err, &e) || e.Path != "budget.sources[2].share" {
		t.Fatalf("DecodeAt = %v, want the path budget.sources[2].share", err)
	}
	if got := err.Error(); got != "budget.sources[2].share: must be a string, not number" {
		t.Errorf("Error() = %q", got)
	}
	err = strictjson.DecodeAt("guard", []byte(`{"url":`), &d)
	if !errors.As(err, &e) || e.Path != "guard" || !e.Syntax || e.Offset != 7 {
		t.Fatalf("DecodeAt syntax error = %#v", err)
	}
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  strictjson.Error
		want string
	}{
		{strictjson.Error{Path: "items[3].id", Reason: "unknown field"}, "items[3].id: unknown field"},
		{strictjson.Error{Reason: "must be a JSON object, not null"}, "document must be a JSON object, not null"},
		{strictjson.Error{Reason: "unexpected end of JSON input", Offset: 7, Syntax: true}, "malformed JSON at byte 7: unexpected end of JSON input"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

func TestSyntaxOffsetAndPosition(t *testing.T) {
	t.Parallel()
	data := []byte("{\n\"url\": \"a\"\n\"Plain\": 1}")
	var d doc
	var e *strictjson.Error
	if err := strictjson.Decode(data, &d); !errors.As(err, &e) || !e.Syntax {
		t.Fatalf("Decode = %v, want a syntax error", err)
	}
	if line, col := strictjson.Position(data, e.Offset); line != 3 || col != 1 {
		t.Errorf("Position = line %d, column %d, want line 3, column 1", line, col)
	}
	if line, col := strictjson.Position(data, 0); line != 1 || col != 1 {
		t.Errorf("Position(0) = %d:%d", line, col)
	}
}

func TestJoin(t *testing.T) {
	t.Parallel()
	for _, tc := range [][3]string{
		{"", "a", "a"}, {"a", "", "a"}, {"budget", "sources[2].share", "budget.sources[2].share"}, {"items", "[3].id", "items[3].id"},
	} {
		if got := strictjson.Join(tc[0], tc[1]); got != tc[2] {
			t.Errorf("Join(%q, %q) = %q, want %q", tc[0], tc[1], got, tc[2])
		}
	}
}

func TestDepthBounded(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", strictjson.MaxDepth+2) + strings.Repeat("]", strictjson.MaxDepth+2)
	var v any
	var e *strictjson.Error
	if err := strictjson.Decode([]byte(deep), &v); !errors.As(err, &e) || !strings.Contains(e.Reason, "levels deep") {
		t.Fatalf("Decode(deep) = %v", err)
	}
}

func TestUnmarshalerErrorsCarryThePath(t *testing.T) {
	t.Parallel()
	var d struct {
		Items []struct {
			When textValue `json:"when"`
		} `json:"items"`
	}
	var e *strictjson.Error
	err := strictjson.Decode([]byte(`{"items":[{"when":"ok"},{"when":"bad"}]}`), &d)
	if !errors.As(err, &e) || e.Path != "items[1].when" || e.Reason != "want ok" {
		t.Fatalf("Decode = %#v", err)
	}
	if err := strictjson.Decode([]byte(`{"items":[{"when":1}]}`), &d); !errors.As(err, &e) || e.Reason != "must be a string, not number" {
		t.Fatalf("Decode(number for text) = %v", err)
	}
}

type textValue string

func (v *textValue) UnmarshalText(b []byte) error {
	if string(b) != "ok" {
		return errors.New("want ok")
	}
	*v = textValue(b)
	return nil
}

func TestDecodePanicsOnNonPointer(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("Decode into a non-pointer did not panic")
		}
	}()
	_ = strictjson.Decode([]byte(`{}`), doc{})
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"url":"http://a"}`, `{"url":`, `[]`, `null`, `{"url":5}`, `{"URL":1}`, `{"url":"a","url":"b"}`,
		`{"items":[{"id":"a","priority":3}]}`, `{} {}`, `{"url":"\udc00"}`, "\xff", `{"any":[1,{"a":null}]}`, `{"limits":{"a":1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got doc
		err := strictjson.Decode(data, &got)
		if err != nil {
			var e *strictjson.Error
			if !errors.As(err, &e) || e.Reason == "" {
				t.Fatalf("Decode(%q) = %v, want a *strictjson.Error with a reason", data, err)
			}
			if e.Offset < 0 || e.Offset > int64(len(data)) {
				t.Fatalf("offset %d outside a %d-byte document", e.Offset, len(data))
			}
			if !reflect.DeepEqual(got, doc{}) {
				t.Fatalf("a refused document changed dst: %+v", got)
			}
			return
		}
		// What is accepted is valid JSON that encoding/json reads the same
		// way, with no text replaced on the way.
		if !json.Valid(data) || !utf8.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		var want doc
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&want); err != nil {
			t.Fatalf("encoding/json refuses what Decode accepted (%q): %v", data, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%q) = %+v, encoding/json %+v", data, got, want)
		}
		if strings.ContainsRune(got.URL, utf8.RuneError) && !strings.Contains(string(data), "\uFFFD") &&
			!strings.Contains(strings.ToLower(string(data)), `\ufffd`) {
			t.Fatalf("Decode replaced text with U+FFFD in %q", data)
		}
	})
}

func TestManyKeysAndDuplicatesAmongThem(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("{")
	for i := range 50000 {
		fmt.Fprintf(&b, `"k%d":%d,`, i, i)
	}
	b.WriteString(`"k49999":0}`)
	var v map[string]int
	var e *strictjson.Error
	if err := strictjson.Decode([]byte(b.String()), &v); !errors.As(err, &e) || e.Path != "k49999" || e.Reason != "duplicate key" {
		t.Fatalf("Decode = %v, want k49999: duplicate key", err)
	}
}

func TestMismatchKeepsThePath(t *testing.T) {
	t.Parallel()
	var d doc
	var e *strictjson.Error
	if err := strictjson.Decode([]byte(`{"items":[{"id":{"a":1,"a":2}}]}`), &d); !errors.As(err, &e) || e.Path != "items[0].id" || e.Reason != "must be a string, not object" {
		t.Fatalf("Decode = %#v", err)
	}
}
