package kongemu

import "github.com/konductor/konductor/internal/kongrules"

// pluginFields returns the fields of the plugins entity with config (and
// protocols' default) specific to the named plugin.
func pluginFields(p profile, name string) []*field {
	base := schemas["plugins"].fieldsFor(p)
	kp := p.plugin(name)
	out := make([]*field, len(base))
	for i, f := range base {
		switch {
		case f.Name == "config" && kp != nil:
			out[i] = &field{Name: "config", Type: kongrules.Record, Required: true, Fields: kp.Config}
		case f.Name == "protocols" && kp != nil:
			c := *f
			c.Default = kp.Protocols
			c.Elem = &field{Type: kongrules.String, OneOf: kp.Protocols}
			out[i] = &c
		default:
			out[i] = f
		}
	}
	return out
}

func pluginSchemaJSON(p profile, name string) map[string]any {
	kp := p.plugin(name)
	var keep []*field
	for _, f := range pluginFields(p, name) {
		switch f.Name {
		case "consumer", "consumer_group", "route", "service", "protocols", "config":
			keep = append(keep, f)
		}
	}
	out := map[string]any{"fields": kongrules.FieldsJSON(keep)}
	if kp.EntityChecks != nil {
		out["entity_checks"] = kp.EntityChecks
	} else {
		out["entity_checks"] = []any{}
	}
	return out
}
