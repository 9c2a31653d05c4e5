package kongrules

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Sparse is an error tree for an array: index (0-based) -> error. It is
// encoded the way Kong's cjson encodes a sparse Lua array: a JSON array
// with nulls, or an object with 1-based keys when it is too sparse.
type Sparse map[int]any

// MarshalJSON implements cjson's encode_sparse_array(true) rule (ratio 2, safe 10).
func (s Sparse) MarshalJSON() ([]byte, error) {
	maxIdx := 0
	for i := range s {
		if i+1 > maxIdx {
			maxIdx = i + 1
		}
	}
	if maxIdx > 10 && maxIdx > len(s)*2 {
		m := make(map[string]any, len(s))
		for i, v := range s {
			m[strconv.Itoa(i+1)] = v
		}
		return json.Marshal(m)
	}
	arr := make([]any, maxIdx)
	for i, v := range s {
		arr[i] = v
	}
	return json.Marshal(arr)
}

// ErrTree is Kong's nested field error table: field -> string | ErrTree | sparse,
// plus "@entity" -> []any of strings.
type ErrTree = map[string]any

func AddEntityErr(t ErrTree, msg string) {
	l, _ := t["@entity"].([]any)
	t["@entity"] = append(l, msg)
}

// MergeErr merges the tree b into a.
func MergeErr(a ErrTree, b ErrTree) {
	for k, v := range b {
		if k == "@entity" {
			for _, m := range v.([]any) {
				AddEntityErr(a, m.(string))
			}
			continue
		}
		if _, ok := a[k]; !ok {
			a[k] = v
		}
	}
}

// Validator carries the options of one validation pass.
type Validator struct {
	Defaults bool // apply defaults to absent fields (insert, upsert, declarative)
	// EndpointKey names the field by which a foreign key may reference an entity of the
	// given collection besides its id ("" or nil: by id only).
	EndpointKey func(collection string) string
}

// Record validates in against fields fs. It returns the normalized
// record (every field present, nil where unset) and an error tree (nil when valid).
func (v Validator) Record(fs []*Field, in map[string]any) (map[string]any, ErrTree) {
	out := make(map[string]any, len(fs))
	errs := ErrTree{}
	known := make(map[string]bool, len(fs))
	for _, f := range fs {
		known[f.Name] = true
	}
	for k := range in {
		if !known[k] {
			errs[k] = "unknown field"
		}
	}
	for _, f := range fs {
		val, present := in[f.Name]
		if !present {
			if v.Defaults && f.Default != nil {
				val = DeepCopy(f.Default)
				present = true
			} else if v.Defaults && f.Type == Record && f.Fields != nil && f.Required {
				val = map[string]any{}
				present = true
			}
		}
		if val == nil {
			if f.Required && !f.Auto && f.Type != Foreign {
				errs[f.Name] = "required field missing"
			} else if f.Required && f.Type == Foreign {
				errs[f.Name] = "required field missing"
			}
			out[f.Name] = nil
			continue
		}
		nv, e := v.Value(f, val)
		if e != nil {
			errs[f.Name] = e
		}
		out[f.Name] = nv
	}
	if len(errs) == 0 {
		return out, nil
	}
	return out, errs
}

// Value checks one non-nil value against f.
func (v Validator) Value(f *Field, val any) (any, any) {
	switch f.Type {
	case String:
		s, ok := val.(string)
		if !ok {
			return val, "expected a string"
		}
		minLen := f.LenMin
		if minLen == 0 {
			minLen = 1
		}
		if utf8.RuneCountInString(s) < minLen {
			return val, fmt.Sprintf("length must be at least %d", minLen)
		}
		if f.UUID {
			if _, err := uuid.Parse(s); err != nil || len(s) != 36 {
				return val, "expected a valid UUID"
			}
		}
		if f.OneOf != nil && !oneOf(f.OneOf, s) {
			return val, "expected one of: " + joinAny(f.OneOf)
		}
	case Integer:
		n, ok := ToFloat(val)
		if !ok || n != math.Trunc(n) || math.IsInf(n, 0) {
			return val, "expected an integer"
		}
		val = int64(n)
		if f.OneOf != nil && !oneOf(f.OneOf, int64(n)) {
			return val, "expected one of: " + joinAny(f.OneOf)
		}
		if f.Between != nil && (n < f.Between[0] || n > f.Between[1]) {
			return val, fmt.Sprintf("value should be between %s and %s", Fnum(f.Between[0]), Fnum(f.Between[1]))
		}
		if f.GT != nil && n <= *f.GT {
			return val, fmt.Sprintf("value must be greater than %s", Fnum(*f.GT))
		}
	case Number:
		n, ok := ToFloat(val)
		if !ok {
			return val, "expected a number"
		}
		val = n
		if f.Between != nil && (n < f.Between[0] || n > f.Between[1]) {
			return val, fmt.Sprintf("value should be between %s and %s", Fnum(f.Between[0]), Fnum(f.Between[1]))
		}
		if f.GT != nil && n <= *f.GT {
			return val, fmt.Sprintf("value must be greater than %s", Fnum(*f.GT))
		}
	case Boolean:
		if _, ok := val.(bool); !ok {
			return val, "expected a boolean"
		}
	case Array, Set:
		arr, ok := val.([]any)
		if !ok {
			// Kong accepts an empty JSON object as an empty array.
			if m, isMap := val.(map[string]any); isMap && len(m) == 0 {
				return []any{}, nil
			}
			if f.Type == Set {
				return val, "expected a set"
			}
			return val, "expected an array"
		}
		out := make([]any, 0, len(arr))
		errs := Sparse{}
		for i, el := range arr {
			if el == nil {
				errs[i] = "required field missing"
				out = append(out, nil)
				continue
			}
			nv, e := v.Value(f.Elem, el)
			if e != nil {
				errs[i] = e
			}
			out = append(out, nv)
		}
		if len(errs) > 0 {
			return out, errs
		}
		val = out
	case Map:
		m, ok := val.(map[string]any)
		if !ok {
			return val, "expected a map"
		}
		out := make(map[string]any, len(m))
		errs := ErrTree{}
		for k, el := range m {
			if f.Key != nil {
				if _, e := v.Value(f.Key, k); e != nil {
					errs[k] = e
					continue
				}
			}
			if el == nil {
				out[k] = nil
				continue
			}
			nv, e := v.Value(f.Elem, el)
			if e != nil {
				errs[k] = e
			}
			out[k] = nv
		}
		if len(errs) > 0 {
			return out, errs
		}
		val = out
	case Record:
		m, ok := val.(map[string]any)
		if !ok {
			return val, "expected a record"
		}
		if f.Fields == nil {
			return val, nil
		}
		out, errs := v.Record(f.Fields, m)
		if errs != nil {
			return out, errs
		}
		val = out
	case Foreign:
		m, ok := val.(map[string]any)
		if !ok {
			return val, "expected a record"
		}
		// Foreign keys are {id} (or the referenced entity's endpoint key, resolved later).
		for k, x := range m {
			if k == "id" {
				s, isStr := x.(string)
				if !isStr {
					return val, ErrTree{"id": "expected a string"}
				}
				if _, err := uuid.Parse(s); err != nil || len(s) != 36 {
					return val, ErrTree{"id": "expected a valid UUID"}
				}
				continue
			}
			if v.EndpointKey == nil || v.EndpointKey(f.Ref) != k {
				return val, ErrTree{k: "unknown field"}
			}
			if _, isStr := x.(string); !isStr {
				return val, ErrTree{k: "expected a string"}
			}
		}
		if len(m) == 0 {
			return val, ErrTree{"id": "required field missing"}
		}
	case JSON:
	}
	if f.Check != nil {
		if e := f.Check(val); e != nil {
			if s, ok := e.(string); !ok || s != "" {
				return val, e
			}
		}
	}
	return val, nil
}

func ToFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}

func Fnum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func oneOf(set []any, v any) bool {
	for _, x := range set {
		switch y := x.(type) {
		case int:
			if n, ok := v.(int64); ok && int64(y) == n {
				return true
			}
		default:
			if x == v {
				return true
			}
		}
	}
	return false
}

func joinAny(l []any) string {
	parts := make([]string, len(l))
	for i, x := range l {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ", ")
}

// ---- entity checks ----

func IsNull(v any) bool {
	if v == nil {
		return true
	}
	switch x := v.(type) {
	case string:
		return false
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return strings.Join(q, ", ")
}

// GetPath reads a dotted path ("config.second") from an entity.
func GetPath(e map[string]any, path string) any {
	var cur any = e
	for _, p := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

// countCheck makes an entity check that fails with msg and the quoted names when the
// number of non-empty fields among names is not ok.
func countCheck(msg string, ok func(n int) bool, names []string) EntityCheck {
	return func(e map[string]any) ([]string, map[string]any) {
		n := 0
		for _, name := range names {
			if !IsNull(GetPath(e, name)) {
				n++
			}
		}
		if ok(n) {
			return nil, nil
		}
		return []string{msg + quoteList(names)}, nil
	}
}

// AtLeastOneOf is Kong's at_least_one_of entity check.
func AtLeastOneOf(names ...string) EntityCheck {
	return countCheck("at least one of these fields must be non-empty: ", func(n int) bool { return n > 0 }, names)
}

// OnlyOneOf is Kong's only_one_of entity check.
func OnlyOneOf(names ...string) EntityCheck {
	return countCheck("only one of these fields must be non-empty: ", func(n int) bool { return n <= 1 }, names)
}

// MutuallyExclusive is Kong's mutually_exclusive entity check.
func MutuallyExclusive(names ...string) EntityCheck {
	return countCheck("only one or none of these fields must be set: ", func(n int) bool { return n <= 1 }, names)
}

// WalkErrors visits every message of an error tree in Kong's order: field messages with their
// dotted path (array positions 1-based), entity-level messages ("@entity") with entity set.
func WalkErrors(t any, prefix string, visit func(field string, entity bool, msg any)) {
	switch x := t.(type) {
	case string:
		visit(strings.TrimSuffix(prefix, "."), false, x)
	case ErrTree:
		for _, k := range SortedKeys(x) {
			if k == "@entity" {
				for _, m := range x[k].([]any) {
					visit("", true, m)
				}
				continue
			}
			WalkErrors(x[k], prefix+k+".", visit)
		}
	case Sparse:
		idx := make([]int, 0, len(x))
		for i := range x {
			idx = append(idx, i)
		}
		sort.Ints(idx)
		for _, i := range idx {
			WalkErrors(x[i], fmt.Sprintf("%s%d.", prefix, i+1), visit)
		}
	}
}

// FieldError is one message of an error tree: Field is the dotted path ("config.minute",
// "config.allow.2"), empty for a message about the entity as a whole.
type FieldError struct {
	Field   string
	Message string
}

// Flatten lists the messages of an error tree in Kong's order, field paths prefixed.
func Flatten(t ErrTree, prefix string) []FieldError {
	var out []FieldError
	WalkErrors(t, prefix, func(field string, entity bool, msg any) {
		out = append(out, FieldError{Field: field, Message: fmt.Sprint(msg)})
	})
	return out
}
