package kongrules

import (
	"sort"
)

// Type is the type of a schema field, named as Kong names it in /schemas.
type Type string

// The field types of Kong's schema library.
const (
	String  Type = "string"
	Integer Type = "integer"
	Number  Type = "number"
	Boolean Type = "boolean"
	Array   Type = "array"
	Set     Type = "set"
	Map     Type = "map"
	Record  Type = "record"
	Foreign Type = "foreign"
	JSON    Type = "json"
)

// Field describes one field of an entity or of a plugin's config record, with the
// constraints of Kong's schema library that the project needs.
type Field struct {
	Name     string
	Type     Type
	Default  any // nil: no default
	Required bool
	Auto     bool // id (uuid), timestamps and generated secrets, filled on insert
	UUID     bool
	Unique   bool
	Elem     *Field   // array, set: element; map: value
	Key      *Field   // map key
	Fields   []*Field // record
	Ref      string   // foreign: referenced entity (collection name)
	OnDelete string   // foreign: "cascade" or "" (restrict)
	OneOf    []any
	Between  *[2]float64
	GT       *float64
	LenMin   int
	// Check validates a non-null value that passed the type checks; it
	// returns "" or an error message, or an error tree (ErrTree) for records.
	Check func(v any) any
	// Transient fields (certificate snis) are accepted on input and not stored.
	Transient bool
}

// EntityCheck validates an entity (or a plugin entity with its config) as a whole. It
// returns entity-level messages and a tree of field errors (nil when valid).
type EntityCheck func(e map[string]any) (entity []string, fields map[string]any)

// Between makes the bounds of a between constraint.
func Between(a, b float64) *[2]float64 { return &[2]float64{a, b} }

// Strs makes a []any of strings (one_of lists, defaults).
func Strs(v ...string) []any {
	out := make([]any, len(v))
	for i, s := range v {
		out[i] = s
	}
	return out
}

// Ints makes a []any of ints (one_of lists, defaults).
func Ints(v ...int) []any {
	out := make([]any, len(v))
	for i, s := range v {
		out[i] = s
	}
	return out
}

func gt(x float64) *float64 { return &x }

// StrArray is an array of strings with an optional default.
func StrArray(name string, def []any) *Field {
	f := &Field{Name: name, Type: Array, Elem: &Field{Type: String}}
	if def != nil {
		f.Default = def
	}
	return f
}

// BoolField is a required boolean with a default, Kong's most common plugin field.
func BoolField(name string, def bool) *Field {
	return &Field{Name: name, Type: Boolean, Default: def, Required: true}
}

// FieldsJSON renders fields as Kong's /schemas endpoints do.
func FieldsJSON(fs []*Field) []any {
	out := make([]any, 0, len(fs))
	for _, f := range fs {
		if f.Transient {
			out = append(out, map[string]any{f.Name: map[string]any{"type": string(f.Type), "transient": true,
				"elements": FieldJSON(f.Elem)}})
			continue
		}
		out = append(out, map[string]any{f.Name: FieldJSON(f)})
	}
	return out
}

// FieldJSON renders one field as Kong's /schemas endpoints do.
func FieldJSON(f *Field) map[string]any {
	m := map[string]any{"type": string(f.Type)}
	if f.Type == Foreign {
		m["reference"] = f.Ref
		if f.OnDelete != "" {
			m["on_delete"] = f.OnDelete
		}
	}
	if f.Default != nil {
		m["default"] = DeepCopy(f.Default)
	}
	flags := []struct {
		on   bool
		name string
	}{{f.Required, "required"}, {f.Auto, "auto"}, {f.UUID, "uuid"}, {f.Unique, "unique"}}
	for _, fl := range flags {
		if fl.on {
			m[fl.name] = true
		}
	}
	if f.OneOf != nil {
		m["one_of"] = f.OneOf
	}
	if f.Between != nil {
		m["between"] = []any{f.Between[0], f.Between[1]}
	}
	if f.GT != nil {
		m["gt"] = *f.GT
	}
	if f.LenMin > 0 {
		m["len_min"] = f.LenMin
	}
	switch f.Type {
	case Array, Set:
		if f.Elem != nil {
			m["elements"] = FieldJSON(f.Elem)
		}
	case Map:
		if f.Key != nil {
			m["keys"] = FieldJSON(f.Key)
		}
		if f.Elem != nil {
			m["values"] = FieldJSON(f.Elem)
		}
	case Record:
		m["fields"] = FieldsJSON(f.Fields)
	}
	return m
}

// DeepCopy copies JSON-shaped values (maps, slices, scalars).
func DeepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = DeepCopy(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = DeepCopy(e)
		}
		return a
	default:
		return v
	}
}

// SortedKeys returns the keys of m in order.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
