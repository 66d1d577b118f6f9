package strictjson

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// field is one member a struct accepts, found as encoding/json finds it.
type field struct {
	name   string
	typ    reflect.Type
	depth  int
	tagged bool
}

type structFields struct {
	byName map[string]field
	names  []string // in declaration order, for case-variant hints
}

var fieldCache sync.Map // reflect.Type -> *structFields

// structMembersOfType returns the fields struct type t accepts.
func structMembersOfType(t reflect.Type) *structFields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*structFields)
	}
	sf := &structFields{byName: map[string]field{}}
	var all []field
	collect(t, 0, map[reflect.Type]bool{}, &all)
	// The shallowest field of a name wins; at one depth a tagged field
	// beats untagged ones, and a tie leaves the name out, as encoding/json
	// does.
	ambiguous := map[string]bool{}
	for _, f := range all {
		old, ok := sf.byName[f.name]
		switch {
		case !ok && !ambiguous[f.name]:
			sf.byName[f.name] = f
			sf.names = append(sf.names, f.name)
		case !ok:
		case f.depth < old.depth || f.depth == old.depth && f.tagged && !old.tagged:
			sf.byName[f.name] = f
		case f.depth == old.depth && f.tagged == old.tagged:
			delete(sf.byName, f.name)
			ambiguous[f.name] = true
		}
	}
	f, _ := fieldCache.LoadOrStore(t, sf)
	return f.(*structFields)
}

func collect(t reflect.Type, depth int, visiting map[reflect.Type]bool, out *[]field) {
	if visiting[t] {
		return
	}
	visiting[t] = true
	defer delete(visiting, t)
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := sf.Type
		if sf.Anonymous {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if !sf.IsExported() && et.Kind() != reflect.Struct {
				continue
			}
			if name == "" && et.Kind() == reflect.Struct {
				collect(et, depth+1, visiting, out)
				continue
			}
		} else if !sf.IsExported() {
			continue
		}
		tagged := name != ""
		if !tagged {
			name = sf.Name
		}
		*out = append(*out, field{name: name, typ: ft, depth: depth, tagged: tagged})
	}
}

type structMembersT struct{ f *structFields }

func structMembers(t reflect.Type) members { return structMembersT{structMembersOfType(t)} }

func (m structMembersT) lookup(key string) (reflect.Type, string, string) {
	if f, ok := m.f.byName[key]; ok {
		return f.typ, key, ""
	}
	for _, n := range m.f.names {
		if _, ok := m.f.byName[n]; ok && strings.EqualFold(n, key) {
			// encoding/json would quietly take this key for n; a client
			// that spells it differently is more likely confused.
			return nil, "", fmt.Sprintf("unknown field; did you mean %q?", n)
		}
	}
	return nil, "", "unknown field"
}

type mapMembersT struct{ t reflect.Type }

func mapMembers(t reflect.Type) members { return mapMembersT{t} }

func (m mapMembersT) lookup(key string) (reflect.Type, string, string) {
	kt := m.t.Key()
	switch {
	case reflect.PointerTo(kt).Implements(textUnmarshalerType):
		u := reflect.New(kt).Interface().(encoding.TextUnmarshaler)
		if err := u.UnmarshalText([]byte(key)); err != nil {
			return nil, "", "is not a valid key: " + err.Error()
		}
	case kt.Kind() == reflect.String:
	case kt.Kind() >= reflect.Int && kt.Kind() <= reflect.Int64:
		if _, err := strconv.ParseInt(key, 10, kt.Bits()); err != nil {
			return nil, "", "is not a valid key: want a whole number"
		}
	case kt.Kind() >= reflect.Uint && kt.Kind() <= reflect.Uintptr:
		if _, err := strconv.ParseUint(key, 10, kt.Bits()); err != nil {
			return nil, "", "is not a valid key: want a whole number from 0"
		}
	default:
		return nil, "", "cannot be decoded: the map's key type is not one JSON can spell"
	}
	return m.t.Elem(), key, ""
}
