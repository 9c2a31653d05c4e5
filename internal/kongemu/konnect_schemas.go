package kongemu

import (
	"net/http"

	"github.com/konductor/konductor/internal/kongrules"
)

// GET /v1/schemas/json/{entity}: Konnect's JSON Schema of a core entity, which
// go-database-reconciler's defaulter reads in Konnect mode (utils.Defaulter.getEntitySchema)
// for services, routes, upstreams and targets, and go-kong flattens into defaults
// (kong.FillEntityDefaults: "properties", each with "type" and "default"; an "object" with
// "additionalProperties": false is a foreign key or a map and gets no defaults). Konnect's
// own documents are not known here: these are made from the emulator's schemas, so the
// defaults are Kong's, the ones the control plane's entities are rendered with. Without
// them (a 404, which the client tolerates) the target lacks the defaults the dump has and
// every sync updates every service, route, upstream and target.

// konnectSchemaNames are the entity names of the path (go-database-reconciler's
// KongToKonnectEntitiesMap), by collection name.
var konnectSchemaNames = map[string]string{
	"service": "services", "route": "routes", "upstream": "upstreams", "target": "targets",
	"jwt": "jwt_secrets", "consumer": "consumers", "consumer_group": "consumer_groups",
	"certificate": "certificates", "ca_certificate": "ca_certificates", "key": "keys", "key-set": "key_sets",
	"hmac-auth": "hmacauth_credentials", "basic-auth": "basicauth_credentials",
	"mtls-auth": "mtls_auth_credentials", "sni": "snis", "vault": "vaults",
}

// serveJSONSchema serves GET /v1/schemas/json/{entity}; 404 with a message for an entity
// without one.
func (k *Konnect) serveJSONSchema(w http.ResponseWriter, r *http.Request, cp *konnectCP, segs []string) {
	if len(segs) != 2 || segs[0] != "json" {
		konnectMsg(w, http.StatusNotFound, "Not found")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeErr(w, methodNotAllowed)
		return
	}
	s := schemas[konnectSchemaNames[segs[1]]]
	if s == nil || !s.has(cp.emu.prof) {
		konnectMsg(w, http.StatusNotFound, "No schema for entity '"+segs[1]+"'")
		return
	}
	out := jsonSchemaObject(s.fieldsFor(cp.emu.prof))
	out["title"] = segs[1]
	writeJSON(w, http.StatusOK, out)
}

// jsonSchemaObject renders fields as a JSON Schema object.
func jsonSchemaObject(fs []*field) map[string]any {
	props := map[string]any{}
	var required []any
	for _, f := range fs {
		if f.Transient {
			continue
		}
		props[f.Name] = jsonSchemaField(f)
		if f.Required && f.Default == nil {
			required = append(required, f.Name)
		}
	}
	out := map[string]any{"type": "object", "properties": props}
	if required != nil {
		out["required"] = required
	}
	return out
}

// jsonSchemaField renders one field as a JSON Schema.
func jsonSchemaField(f *field) map[string]any {
	var m map[string]any
	switch f.Type {
	case kongrules.Foreign:
		m = map[string]any{"type": "object", "additionalProperties": false,
			"properties": map[string]any{"id": map[string]any{"type": "string"}}}
	case kongrules.Record:
		m = jsonSchemaObject(f.Fields)
	case kongrules.Map:
		m = map[string]any{"type": "object", "additionalProperties": false}
		if f.Elem != nil {
			m["additionalProperties"] = jsonSchemaField(f.Elem)
		}
	case kongrules.Array, kongrules.Set:
		m = map[string]any{"type": "array"}
		if f.Elem != nil {
			m["items"] = jsonSchemaField(f.Elem)
		}
		if f.Type == kongrules.Set {
			m["uniqueItems"] = true
		}
	case kongrules.JSON:
		m = map[string]any{}
	default:
		m = map[string]any{"type": string(f.Type)}
	}
	if f.OneOf != nil {
		m["enum"] = f.OneOf
	}
	if f.Between != nil {
		m["minimum"], m["maximum"] = f.Between[0], f.Between[1]
	}
	if f.LenMin > 0 {
		if f.Type == kongrules.String {
			m["minLength"] = f.LenMin
		} else {
			m["minItems"] = f.LenMin
		}
	}
	if f.Default != nil {
		m["default"] = kongrules.DeepCopy(f.Default)
	}
	if f.UUID {
		m["format"] = "uuid"
	}
	return m
}
