package kongemu

import (
	"github.com/konductor/konductor/internal/kongrules"

	"net/http"
	"sort"
	"strings"

	"github.com/google/uuid"
)

func newNodeID() string { return uuid.NewString() }

// info is the body of GET /.
func (e *Emulator) info() map[string]any {
	e.mu.Lock()
	nodeID := e.nodeID
	e.mu.Unlock()
	available := map[string]any{}
	var names []any
	for _, n := range kongrules.PluginNames(e.prof.enterprise) {
		p := kongrules.Plugin(n)
		available[n] = map[string]any{"version": p.Version, "priority": p.Priority}
		names = append(names, n)
	}
	return map[string]any{
		"tagline":     "Welcome to kong",
		"version":     e.opts.Version,
		"edition":     string(e.opts.Edition),
		"hostname":    e.opts.Hostname,
		"node_id":     nodeID,
		"lua_version": "LuaJIT 2.1.0-20231117",
		"plugins": map[string]any{
			"available_on_server": available,
			"enabled_in_cluster":  names,
		},
		"configuration": map[string]any{
			"database":               string(e.opts.Mode),
			"router_flavor":          e.opts.RouterFlavor,
			"role":                   "traditional",
			"plugins":                []any{"bundled"},
			"admin_listen":           []any{"127.0.0.1:8001"},
			"proxy_listen":           stringsAny(e.opts.ProxyListen),
			"stream_listen":          stringsAny(e.opts.StreamListen),
			"proxy_listeners":        listeners(e.opts.ProxyListen, proxyListenFlags),
			"stream_listeners":       listeners(e.opts.StreamListen, streamListenFlags),
			"nginx_worker_processes": "auto",
			// Strings, as kong.conf has them (kong_defaults.lua).
			kongrules.AdminMaxBodySizeKey:    e.opts.AdminMaxBodySize,
			kongrules.AdminBodyBufferSizeKey: "10m",
		},
		"timers": map[string]any{"running": 0, "pending": 0},
		"pids":   map[string]any{"master": 1, "workers": []any{2}},
	}
}

// status is the body of GET /status.
func (e *Emulator) status() map[string]any {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]any{
		"memory": map[string]any{
			"workers_lua_vms": []any{map[string]any{"http_allocated_gc": "0.02 MiB", "pid": 2}},
			"lua_shared_dicts": map[string]any{
				"kong": map[string]any{"allocated_slabs": "0.04 MiB", "capacity": "5.00 MiB"},
			},
		},
		"server": map[string]any{
			"connections_accepted": e.total,
			"connections_active":   1,
			"connections_handled":  e.total,
			"connections_reading":  0,
			"connections_writing":  1,
			"connections_waiting":  0,
			"total_requests":       e.total,
		},
	}
	if e.dbless() {
		out["configuration_hash"] = e.configHash
	} else {
		out["database"] = map[string]any{"reachable": true}
	}
	return out
}

// handleSchemas serves /schemas/{entity}, /schemas/plugins/{name} and the validate endpoints.
func (e *Emulator) handleSchemas(w http.ResponseWriter, r *http.Request, segs []string) {
	switch {
	case len(segs) == 1 && r.Method == http.MethodGet:
		s := schemas[segs[0]]
		if s == nil || !s.has(e.prof) {
			writeErr(w, msgErr(http.StatusNotFound, "No entity named '"+segs[0]+"'"))
			return
		}
		writeJSON(w, http.StatusOK, s.JSON(e.prof))
	case len(segs) == 2 && segs[0] == "plugins" && segs[1] == "validate":
		if r.Method != http.MethodPost {
			writeErr(w, methodNotAllowed)
			return
		}
		e.validateOnly(w, r, schemas["plugins"])
	case len(segs) == 2 && segs[0] == "plugins" && r.Method == http.MethodGet:
		if e.prof.plugin(segs[1]) == nil {
			writeErr(w, msgErr(http.StatusNotFound, "No plugin named '"+segs[1]+"'"))
			return
		}
		writeJSON(w, http.StatusOK, pluginSchemaJSON(e.prof, segs[1]))
	case len(segs) == 2 && segs[1] == "validate":
		if r.Method != http.MethodPost {
			writeErr(w, methodNotAllowed)
			return
		}
		s := schemas[segs[0]]
		if s == nil || !s.has(e.prof) {
			writeErr(w, msgErr(http.StatusNotFound, "No entity named '"+segs[0]+"'"))
			return
		}
		e.validateOnly(w, r, s)
	case len(segs) <= 2 && r.Method != http.MethodGet:
		writeErr(w, methodNotAllowed)
	default:
		writeErr(w, errNotFound)
	}
}

// validateOnly checks a body against a schema: fields and entity checks,
// no uniqueness and no foreign keys.
func (e *Emulator) validateOnly(w http.ResponseWriter, r *http.Request, s *schema) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	if _, isForm := body[formMarker]; isForm {
		delete(body, formMarker)
		fs := s.Fields
		if s.Name == "plugins" {
			name, _ := body["name"].(string)
			fs = pluginFields(e.prof, name)
		}
		coerceForm(fs, body)
	}
	if _, errs := normalize(e.prof, s, body, true); errs != nil {
		writeErr(w, schemaViolation(errs))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": "schema validation successful"})
}

// handleTags serves /tags and /tags/{tag}.
func (e *Emulator) handleTags(w http.ResponseWriter, r *http.Request, segs []string) {
	if r.Method != http.MethodGet {
		writeErr(w, methodNotAllowed)
		return
	}
	if len(segs) > 1 {
		writeErr(w, errNotFound)
		return
	}
	e.mu.Lock()
	restore, ok := e.enter(w, r, "tags")
	if !ok {
		e.mu.Unlock()
		return
	}
	var rows []map[string]any
	for _, name := range entityOrder {
		for _, ent := range e.db.list(name) {
			for _, t := range entityTags(ent) {
				if len(segs) == 1 && t != segs[0] {
					continue
				}
				rows = append(rows, map[string]any{"tag": t, "entity_name": name, "entity_id": ent["id"]})
			}
		}
	}
	restore()
	e.mu.Unlock()
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a["entity_id"] != b["entity_id"] {
			return a["entity_id"].(string) < b["entity_id"].(string)
		}
		return a["tag"].(string) < b["tag"].(string)
	})
	path := pathPrefix(r) + "/tags"
	if len(segs) == 1 {
		path += "/" + segs[0]
	}
	e.paginate(w, r, path, rows)
}

// handleEndpoints serves GET /endpoints (the list of routes Kong exposes).
func (e *Emulator) handleEndpoints(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeErr(w, methodNotAllowed)
		return
	}
	var data []any
	for _, s := range sortedKeys(schemaByPath) {
		if sc := schemaByPath[s]; !sc.has(e.prof) || sc.NoAPI {
			continue
		}
		data = append(data, "/"+s, "/"+s+"/{"+strings.TrimSuffix(schemaByPath[s].Name, "s")+"s}")
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data})
}

// schemaFor finds a schema by name ("services") or Admin API path ("key-auths").
func schemaFor(kind string) *schema {
	if s := schemas[kind]; s != nil {
		return s
	}
	return schemaByPath[kind]
}

// Entities returns copies of the stored entities of a kind (schema name
// such as "services", "keyauth_credentials", or Admin API path such as
// "key-auths"), ordered by id, in their response form.
func (e *Emulator) Entities(kind string) []map[string]any {
	s := schemaFor(kind)
	if s == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []map[string]any
	for _, ent := range e.db.list(s.Name) {
		out = append(out, e.db.render(s, ent))
	}
	return out
}

// Entity returns one entity by id or endpoint key, or nil.
func (e *Emulator) Entity(kind, key string) map[string]any {
	s := schemaFor(kind)
	if s == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ent := e.db.lookup(s, key)
	if ent == nil {
		return nil
	}
	return e.db.render(s, ent)
}

// Counts returns the number of stored entities per schema name (non-zero only).
func (e *Emulator) Counts() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int{}
	for k, m := range e.db.ents {
		if len(m) > 0 {
			out[k] = len(m)
		}
	}
	return out
}

// ConfigHash returns the DB-less configuration hash (32 zeros when empty).
func (e *Emulator) ConfigHash() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.configHash
}

// LoadedConfig returns the last declarative configuration that was loaded
// (as posted, parsed), or nil when none is loaded.
func (e *Emulator) LoadedConfig() map[string]any {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.rawConfig == nil {
		return nil
	}
	return kongrules.DeepCopy(e.rawConfig).(map[string]any)
}
