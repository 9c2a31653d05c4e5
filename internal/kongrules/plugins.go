package kongrules

import (
	"sort"
	"strings"
)

// PluginSchema is the part of a plugin's schema that differs between plugins, read out of
// Kong's kong/plugins/<name>/schema.lua.
type PluginSchema struct {
	Name     string
	Version  string
	Priority int
	Config   []*Field
	// Checks run on the plugin entity ({"config": {...}, ...}) once its fields are valid.
	Checks []EntityCheck
	// EntityChecks is the /schemas form of Checks.
	EntityChecks []any
	// Protocols is the default (and the allowed set) of the plugin's protocols field.
	Protocols []any
	// Shorthands maps deprecated config fields to "record.field".
	Shorthands map[string]string
	// NoConsumer: the plugin cannot be scoped to a consumer (typedefs.no_consumer), as
	// for the authentication plugins.
	NoConsumer bool
	// Enterprise: bundled with Kong Gateway Enterprise only (mtls-auth).
	Enterprise bool
}

// Plugin returns the schema of a plugin the project knows, or nil.
func Plugin(name string) *PluginSchema { return pluginSchemas[name] }

// KnownPlugin reports whether the project has the schema of a plugin (Kong's bundled
// plugins that KIC users use most; see PluginNames).
func KnownPlugin(name string) bool { return pluginSchemas[name] != nil }

// PluginNames lists the known plugins in order; with enterprise false, only those Kong OSS
// bundles.
func PluginNames(enterprise bool) []string {
	var out []string
	for name, p := range pluginSchemas {
		if enterprise || !p.Enterprise {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// NotEnabled is Kong's message for a plugin name it does not have.
func NotEnabled(name string) string {
	return "plugin '" + name + "' not enabled; add it to the 'plugins' configuration property"
}

// ExpandShorthands applies a plugin's deprecated shorthand fields (rate-limiting's
// redis_host...) to a copy of its config; the new field wins over its shorthand.
func (p *PluginSchema) ExpandShorthands(cfg map[string]any) map[string]any {
	if len(p.Shorthands) == 0 || cfg == nil {
		return cfg
	}
	out := make(map[string]any, len(cfg))
	for k, v := range cfg {
		out[k] = v
	}
	for _, short := range SortedKeys(p.Shorthands) {
		v, ok := out[short]
		if !ok {
			continue
		}
		delete(out, short)
		if v == nil {
			continue
		}
		rec, field, _ := strings.Cut(p.Shorthands[short], ".")
		sub := map[string]any{}
		if m, ok := out[rec].(map[string]any); ok {
			for k, x := range m {
				sub[k] = x
			}
		}
		if _, set := sub[field]; !set {
			sub[field] = v
		}
		out[rec] = sub
	}
	return out
}

// ValidatePluginConfig checks a plugin's config as Kong does on insert: it fills defaults,
// checks every field, then the plugin's entity checks. It returns the filled config and
// Kong's messages with paths such as "config.minute" (Field "" for entity-level ones). An
// unknown plugin gives one error on "name".
func ValidatePluginConfig(name string, config map[string]any) (map[string]any, []FieldError) {
	p := pluginSchemas[name]
	if p == nil {
		return nil, []FieldError{{Field: "name", Message: NotEnabled(name)}}
	}
	if config == nil {
		config = map[string]any{}
	}
	filled, errs := p.Validate(Validator{Defaults: true}, config)
	if errs != nil {
		return filled, Flatten(errs, "")
	}
	return filled, nil
}

// Validate checks config with v and runs the plugin's entity checks when the fields are
// valid. The error tree is rooted at the plugin entity ({"config": {...}}).
func (p *PluginSchema) Validate(v Validator, config map[string]any) (map[string]any, ErrTree) {
	filled, errs := v.Record(p.Config, p.ExpandShorthands(config))
	if errs != nil {
		return filled, ErrTree{"config": errs}
	}
	return filled, RunChecks(p.Checks, map[string]any{"config": filled})
}

// RunChecks runs entity checks on e and merges their errors (nil when all pass).
func RunChecks(checks []EntityCheck, e map[string]any) ErrTree {
	errs := ErrTree{}
	for _, c := range checks {
		ent, fe := c(e)
		for _, m := range ent {
			AddEntityErr(errs, m)
		}
		MergeErr(errs, fe)
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// PluginDefaults returns the config Kong stores for a plugin given an empty config, or nil
// for an unknown plugin. Required fields without a default are left out.
func PluginDefaults(name string) map[string]any {
	p := pluginSchemas[name]
	if p == nil {
		return nil
	}
	filled, _ := Validator{Defaults: true}.Record(p.Config, map[string]any{})
	return filled
}

func gt0() *float64 { z := 0.0; return &z }

func numGT0(name string) *Field { return &Field{Name: name, Type: Number, GT: gt0()} }

func strArrayReq(name string, def []any) *Field {
	f := StrArray(name, def)
	f.Required = true
	return f
}

func transformRecord(name string, fields ...string) *Field {
	r := &Field{Name: name, Type: Record, Required: true, Default: map[string]any{}}
	for _, f := range fields {
		if f == "uri" {
			r.Fields = append(r.Fields, &Field{Name: "uri", Type: String})
			continue
		}
		r.Fields = append(r.Fields, strArrayReq(f, []any{}))
	}
	return r
}

var pluginSchemas = map[string]*PluginSchema{}

func registerPlugin(p *PluginSchema) {
	if p.Protocols == nil {
		p.Protocols = Strs("grpc", "grpcs", "http", "https")
	}
	if p.Version == "" {
		p.Version = "3.10.0"
	}
	pluginSchemas[p.Name] = p
}
