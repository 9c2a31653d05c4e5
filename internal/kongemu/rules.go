package kongemu

import "github.com/konductor/konductor/internal/kongrules"

// The schema model and validator are kongrules', shared with the translator.
type (
	field       = kongrules.Field
	entityCheck = kongrules.EntityCheck
	errTree     = kongrules.ErrTree
	sparse      = kongrules.Sparse
)

func sortedKeys[V any](m map[string]V) []string { return kongrules.SortedKeys(m) }

func strField(name string) *field { return &field{Name: name, Type: kongrules.String} }

// validator validates against the emulator's entity table: a foreign key may name the
// referenced entity by its endpoint key.
func validator(defaults bool) kongrules.Validator {
	return kongrules.Validator{Defaults: defaults, EndpointKey: func(coll string) string {
		if s := schemas[coll]; s != nil {
			return s.EndpointKey
		}
		return ""
	}}
}
