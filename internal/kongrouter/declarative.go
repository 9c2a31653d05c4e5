package kongrouter

import (
	"crypto/sha1"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	sigsyaml "sigs.k8s.io/yaml"
)

// ConfigFromDeclarative reads a Config from a declarative configuration (Kong's format 3.0,
// JSON or YAML): what `konductor translate` prints, what a DB-less Kong is sent, and what the
// controller's diagnostics serve. Entities nested in another (a service's routes and plugins, a
// route's plugins, an upstream's targets, a consumer's credentials and plugins, a
// certificate's SNIs) get their parent as foreign key, as Kong's declarative loader flattens
// them; a foreign key given as a name or id is resolved to the entity's id; an entity without
// id gets one derived from its kind and name (or place), as stable as the input.
func ConfigFromDeclarative(flavor Flavor, config []byte) (*Config, error) {
	js, err := sigsyaml.YAMLToJSON(config)
	if err != nil {
		return nil, fmt.Errorf("declarative configuration: %w", err)
	}
	var root map[string]any
	if err := json.Unmarshal(js, &root); err != nil {
		return nil, fmt.Errorf("declarative configuration: %w", err)
	}
	f := &flattener{out: map[string][]map[string]any{}, ids: map[string]map[string]string{}}
	for _, kind := range []string{"services", "routes", "upstreams", "consumers", "consumer_groups", "certificates", "plugins"} {
		list, err := entityList(root[kind], kind)
		if err != nil {
			return nil, err
		}
		for i, e := range list {
			f.add(kind, e, kind+"["+fmt.Sprint(i)+"]", "", nil)
		}
	}
	if err := f.resolve(); err != nil {
		return nil, err
	}
	return ConfigFromEntities(flavor, func(kind string) []map[string]any { return f.out[kind] })
}

// nestedKinds are the entities a kind nests, with the foreign key they get to their parent.
var nestedKinds = map[string][]string{
	"services":     {"routes", "plugins"},
	"routes":       {"plugins"},
	"upstreams":    {"targets"},
	"consumers":    {"keyauth_credentials", "basicauth_credentials", "acls", "plugins"},
	"certificates": {"snis"},
}

// foreignKey is the field an entity of kind names its parent of parentKind by.
func foreignKey(parentKind string) string {
	return map[string]string{"services": "service", "routes": "route", "upstreams": "upstream",
		"consumers": "consumer", "certificates": "certificate"}[parentKind]
}

// referenced are the foreign keys resolved by name or id, with the kind they name.
var referenced = map[string]string{"service": "services", "route": "routes", "upstream": "upstreams",
	"consumer": "consumers", "certificate": "certificates", "client_certificate": "certificates",
	"consumer_group": "consumer_groups"}

// schemaDefaults are the defaults of Kong's schemas (kong/db/schema/entities/*.lua) that
// decide routing, the upstream request and plugins: a declarative configuration leaves them
// out (translate renders KIC's, not every default) and Kong's loader fills them in.
var schemaDefaults = map[string]map[string]any{
	"routes": {"protocols": []any{"http", "https"}, "strip_path": true, "preserve_host": false, "regex_priority": 0,
		"https_redirect_status_code": 426, "path_handling": "v0", "request_buffering": true, "response_buffering": true},
	"services": {"protocol": "http", "port": 80, "retries": 5, "connect_timeout": 60000, "read_timeout": 60000,
		"write_timeout": 60000, "enabled": true},
	"targets": {"weight": 100},
	"plugins": {"enabled": true, "protocols": []any{"grpc", "grpcs", "http", "https"}},
}

type flattener struct {
	out map[string][]map[string]any
	ids map[string]map[string]string // kind -> name or id -> id
}

func entityList(v any, where string) ([]map[string]any, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("declarative configuration: %s is not a list", where)
	}
	out := make([]map[string]any, 0, len(list))
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("declarative configuration: %s[%d] is not an object", where, i)
		}
		out = append(out, m)
	}
	return out, nil
}

// entityNamespace is the uuid v5 namespace of the ids given to entities without one.
var entityNamespace = uuid.MustParse("1b7e6f5c-7d1e-4c8e-9a4f-6b1f0c5d2e3a")

func (f *flattener) add(kind string, e map[string]any, where, parentKind string, parent map[string]any) {
	flat := map[string]any{}
	for k, v := range e {
		flat[k] = v
	}
	for _, nested := range nestedKinds[kind] {
		delete(flat, nested)
	}
	if parent != nil {
		flat[foreignKey(parentKind)] = map[string]any{"id": parent["id"]}
	}
	if protos, _ := flat["protocols"].([]any); kind == "routes" && len(protos) > 0 && (protos[0] == "grpc" || protos[0] == "grpcs") {
		// The grpc subschema of routes defaults strip_path to false.
		if _, set := flat["strip_path"]; !set {
			flat["strip_path"] = false
		}
	}
	for k, v := range schemaDefaults[kind] {
		if _, ok := flat[k]; !ok {
			flat[k] = v
		}
	}
	name, _ := flat["name"].(string)
	if kind == "consumers" && name == "" {
		name, _ = flat["username"].(string)
	}
	if _, ok := flat["id"].(string); !ok {
		key := where
		if name != "" {
			key = name
		}
		if kind == "targets" && parent != nil {
			key = fmt.Sprint(parent["id"], "/", flat["target"])
		}
		flat["id"] = uuid.NewHash(sha1.New(), entityNamespace, []byte(kind+"\x00"+key), 5).String()
	}
	id := flat["id"].(string)
	if f.ids[kind] == nil {
		f.ids[kind] = map[string]string{}
	}
	f.ids[kind][id] = id
	if name != "" {
		f.ids[kind][name] = id
	}
	if custom, ok := flat["custom_id"].(string); ok && kind == "consumers" {
		// A consumer is named by its username or its custom_id (Kong's consumer endpoint key).
		f.ids[kind][custom] = id
	}
	f.out[kind] = append(f.out[kind], flat)
	for _, nested := range nestedKinds[kind] {
		list, _ := entityList(e[nested], where+"."+nested)
		for i, n := range list {
			f.add(nested, n, fmt.Sprintf("%s.%s[%d]", where, nested, i), kind, flat)
		}
	}
}

// resolve turns foreign keys given by name or id ("route: default.echo.80", {"name": ...}) into
// {"id": ...}.
func (f *flattener) resolve() error {
	for kind, list := range f.out {
		for _, e := range list {
			for field, refKind := range referenced {
				v, ok := e[field]
				if !ok || v == nil {
					continue
				}
				var key string
				switch ref := v.(type) {
				case string:
					key = ref
				case map[string]any:
					if id, ok := ref["id"].(string); ok {
						key = id
					} else if name, ok := ref["name"].(string); ok {
						key = name
					} else if name, ok := ref["username"].(string); ok {
						key = name
					} else if name, ok := ref["custom_id"].(string); ok {
						key = name
					}
				}
				id, ok := f.ids[refKind][key]
				if !ok {
					return fmt.Errorf("declarative configuration: a %s's %s %q is not in the configuration", kind[:len(kind)-1], field, key)
				}
				e[field] = map[string]any{"id": id}
			}
		}
	}
	return nil
}
