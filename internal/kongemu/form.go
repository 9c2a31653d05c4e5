package kongemu

import (
	"github.com/konductor/konductor/internal/kongrules"

	"encoding/json"
	"net/url"
	"strings"
)

// formBody turns an application/x-www-form-urlencoded body into the nested
// map Kong builds from it: "service.id=x" nests, "hosts[]=a" and repeated
// keys make arrays. Values stay strings until coerceForm gives them the
// schema's types, as Kong does.
func formBody(raw string) (map[string]any, error) {
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for k, vs := range vals {
		isArray := strings.HasSuffix(k, "[]")
		k = strings.TrimSuffix(k, "[]")
		parts := strings.Split(k, ".")
		cur := out
		for _, p := range parts[:len(parts)-1] {
			next, ok := cur[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[p] = next
			}
			cur = next
		}
		last := parts[len(parts)-1]
		if isArray || len(vs) > 1 {
			arr := make([]any, len(vs))
			for i, v := range vs {
				arr[i] = v
			}
			cur[last] = arr
		} else {
			cur[last] = vs[0]
		}
	}
	return out, nil
}

// coerceForm converts form strings to the types of fields fs.
func coerceForm(fs []*field, m map[string]any) {
	for _, f := range fs {
		v, ok := m[f.Name]
		if !ok {
			continue
		}
		m[f.Name] = coerceValue(f, v)
	}
}

func coerceValue(f *field, v any) any {
	switch f.Type {
	case kongrules.Integer, kongrules.Number:
		if s, ok := v.(string); ok {
			n := json.Number(s)
			if _, err := n.Float64(); err == nil {
				return n
			}
		}
	case kongrules.Boolean:
		if s, ok := v.(string); ok {
			switch s {
			case "true":
				return true
			case "false":
				return false
			}
		}
	case kongrules.Array, kongrules.Set:
		if s, ok := v.(string); ok {
			v = []any{s}
		}
		if arr, ok := v.([]any); ok && f.Elem != nil {
			for i := range arr {
				arr[i] = coerceValue(f.Elem, arr[i])
			}
		}
		return v
	case kongrules.Record:
		if rec, ok := v.(map[string]any); ok {
			coerceForm(f.Fields, rec)
		}
	}
	return v
}
