package kongemu

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/konductor/konductor/internal/kongrules"
)

// Kong Gateway Enterprise's workspaces (docs/kong-facts.md, "Workspaces"): the workspaces
// entity at /workspaces, and every other route of the Admin API but GET / served again under
// /{workspace}/..., each workspace holding its own entities. Only the Enterprise emulator has
// them; Kong OSS has no /workspaces endpoint, and /{name}/services is a path it does not know.
//
// Each workspace other than default has a store of its own, so names are unique per
// workspace as in Kong; entity IDs are Kong's primary keys, unique across workspaces, which
// prepare checks (idInOtherWorkspace). The default workspace's store is e.db itself: the
// unprefixed paths, and everything the emulator did before workspaces, go through the same
// code with the same costs.

// defaultWorkspace is the workspace Kong creates in its first migration and serves at the
// unprefixed paths.
const defaultWorkspace = "default"

// workspace is one workspace: its name, its entity as Kong renders it, and its entities.
type workspace struct {
	// name never changes (Kong refuses a rename), so it is read without mu, unlike ent.
	name string
	ent  map[string]any
	db   *db // nil for default, whose store is e.db (replaced by DB-less loads and Restart)
}

// workspaceKey is the context key of the workspace a request's path named.
type workspaceKey struct{}

// unworkspaced are the collections Kong keeps outside workspaces (workspaceable = false):
// /{ws}/licenses lists the same licenses as /licenses.
var unworkspaced = map[string]bool{"licenses": true}

// workspaceSchema is Kong Gateway Enterprise 3.x's workspaces entity
// (kong/db/schema/entities/workspaces.lua): it is not in schemas, since a workspace is not
// an entity of a workspace (no tags, no declarative form, not in /tags).
var workspaceSchema = &schema{
	Name: "workspaces", Path: "workspaces", Singular: "workspace", EndpointKey: "name", Updated: true,
	Fields: []*field{
		idField(),
		{Name: "name", Type: kongrules.String, Required: true, Unique: true, Check: checkWorkspaceName},
		strField("comment"),
		createdAt(),
		updatedAt(),
		// Kong answers both records with every field (null where unset) even when none was
		// given, as for the default workspace its migration makes.
		{Name: "meta", Type: kongrules.Record, Default: map[string]any{}, Fields: []*field{strField("color"), strField("thumbnail")}},
		{Name: "config", Type: kongrules.Record, Default: map[string]any{}, Fields: []*field{
			{Name: "portal", Type: kongrules.Boolean, Required: true, Default: false},
			strField("portal_auth"),
			strField("portal_auth_conf"),
			{Name: "meta", Type: kongrules.Map, Key: strField(""), Elem: strField("")},
			{Name: "portal_auto_approve", Type: kongrules.Boolean},
			{Name: "portal_token_exp", Type: kongrules.Integer},
			{Name: "portal_invite_email", Type: kongrules.Boolean},
			{Name: "portal_access_request_email", Type: kongrules.Boolean},
			{Name: "portal_approved_email", Type: kongrules.Boolean},
			{Name: "portal_reset_email", Type: kongrules.Boolean},
			{Name: "portal_reset_success_email", Type: kongrules.Boolean},
			strField("portal_emails_from"),
			strField("portal_emails_reply_to"),
			{Name: "portal_cors_origins", Type: kongrules.Array, Elem: strField("")},
			{Name: "portal_developer_meta_fields", Type: kongrules.String,
				Default: `[{"label":"Full Name","title":"full_name","validator":{"required":true,"type":"string"}}]`},
		}},
	},
}

// reservedWorkspaceNames are the first path segments the emulator routes without a
// workspace. Kong refuses its core entity names as workspace names (not_one_of
// CORE_ENTITIES), for the same reason: /services/... must not read as a workspace.
func reservedWorkspaceNames() []string {
	out := []string{"config", "endpoints", "kong", "schemas", "status", "tags", "workspaces"}
	for p := range schemaByPath {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// topLevel reports whether seg is a first path segment served without a workspace.
func topLevel(seg string) bool {
	switch seg {
	case "config", "endpoints", "schemas", "status", "tags", "workspaces":
		return true
	}
	return schemaByPath[seg] != nil
}

// checkWorkspaceName is typedefs.utf8_name (ASCII letters, digits and . - _ ~, any non-ASCII
// character) with not_one_of the reserved names.
func checkWorkspaceName(v any) any {
	name, _ := v.(string)
	for _, c := range name {
		if c < utf8.RuneSelf && !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '-' || c == '_' || c == '~') {
			return fmt.Sprintf("invalid value '%s': the only accepted ascii characters are alphanumerics or ., -, _, and ~", name)
		}
	}
	reserved := reservedWorkspaceNames()
	for _, r := range reserved {
		if name == r {
			return "expected none of: " + strings.Join(reserved, ", ")
		}
	}
	return ""
}

// newWorkspaces is the workspaces of a new Enterprise emulator: default alone.
func (e *Emulator) newWorkspaces() map[string]*workspace {
	ent, _ := normalize(e.prof, workspaceSchema, map[string]any{"name": defaultWorkspace}, true)
	fillAuto(workspaceSchema, ent, e.opts.Now().Unix(), nil)
	return map[string]*workspace{defaultWorkspace: {name: defaultWorkspace, ent: ent}}
}

// workspaceByKey finds a workspace by name or id. Caller holds mu.
func (e *Emulator) workspaceByKey(key string) *workspace {
	if ws := e.workspaces[key]; ws != nil {
		return ws
	}
	if isUUID(key) {
		for _, ws := range e.workspaces {
			if ws.ent["id"] == key {
				return ws
			}
		}
	}
	return nil
}

// routeWorkspace serves /{workspace}/... (segs[0] is the workspace's name), as Kong Gateway
// Enterprise's Admin API does: the routes of the unprefixed API, GET /{workspace}/kong for
// GET /, and 404 "Workspace 'x' not found" when no workspace has that name.
func (e *Emulator) routeWorkspace(w http.ResponseWriter, r *http.Request, segs []string) {
	e.mu.Lock()
	ws := e.workspaces[segs[0]]
	e.mu.Unlock()
	rest := segs[1:]
	switch {
	case len(rest) == 0 || (rest[0] != "kong" && !topLevel(rest[0])):
		// Kong registers no /{workspace}/ route, and a path no route matches is "Not found"
		// before any workspace is looked up.
		writeErr(w, errNotFound)
	case ws == nil:
		writeErr(w, msgErr(http.StatusNotFound, fmt.Sprintf("Workspace '%s' not found", segs[0])))
	case rest[0] == "kong":
		// Kong Gateway Enterprise's copy of GET / inside a workspace (go-kong's Root asks it).
		if len(rest) != 1 {
			writeErr(w, errNotFound)
		} else if r.Method != http.MethodGet && r.Method != http.MethodHead {
			writeErr(w, methodNotAllowed)
		} else {
			writeJSON(w, http.StatusOK, e.info())
		}
	case rest[0] == "workspaces":
		e.handleWorkspaces(w, r, ws, rest[1:])
	default:
		e.routeSegs(w, r.WithContext(context.WithValue(r.Context(), workspaceKey{}, ws)), rest)
	}
}

// enter makes e.db the store of the workspace r's path named (none: the default workspace)
// for a request that reads or writes collection, and returns the function that puts the
// default store back; ok=false when that workspace was deleted since the request was routed
// (an answer was written). Every use of e.db is under mu, so between enter and its restore,
// both under mu, e.db is the request's workspace for everything the handlers call, and the
// default workspace's paths pay one context lookup. Caller holds mu.
func (e *Emulator) enter(w http.ResponseWriter, r *http.Request, collection string) (restore func(), ok bool) {
	ws, _ := r.Context().Value(workspaceKey{}).(*workspace)
	if ws == nil {
		return func() {}, true
	}
	if e.workspaces[ws.name] != ws {
		writeErr(w, msgErr(http.StatusNotFound, fmt.Sprintf("Workspace '%s' not found", ws.name)))
		return nil, false
	}
	if ws.db == nil || unworkspaced[collection] {
		return func() {}, true
	}
	e.outside, e.db = e.db, ws.db
	return func() { e.db, e.outside = e.outside, nil }, true
}

// pathPrefix is the workspace prefix of r's path ("/ws1"; "" without one), which the links
// of its answers (next pages) keep.
func pathPrefix(r *http.Request) string {
	if ws, _ := r.Context().Value(workspaceKey{}).(*workspace); ws != nil {
		return "/" + ws.name
	}
	return ""
}

// defaultDB is the default workspace's store, also while a request of another workspace
// has e.db. Caller holds mu.
func (e *Emulator) defaultDB() *db {
	if e.outside != nil {
		return e.outside
	}
	return e.db
}

// idInOtherWorkspace reports whether an entity of kind with this id is stored in a
// workspace other than the current one (e.db): IDs are Kong's primary keys, unique across
// workspaces. Caller holds mu.
func (e *Emulator) idInOtherWorkspace(kind, id string) bool {
	if len(e.workspaces) < 2 {
		return false
	}
	for _, ws := range e.workspaces {
		d := ws.db
		if d == nil {
			d = e.defaultDB()
		}
		if d != e.db && d.get(kind, id) != nil {
			return true
		}
	}
	return false
}

// handleWorkspaces serves /workspaces and /workspaces/{name or id} under the namespace ns
// (the workspace of the path's prefix; nil: none, the default workspace), with Kong's rules
// (kong/api/routes/workspaces.lua): the collection only outside a workspace or in default,
// an item also in its own workspace (go-kong asks /{ws}/workspaces/{ws} whether ws exists),
// default never deleted, a workspace deleted only when empty, never renamed.
func (e *Emulator) handleWorkspaces(w http.ResponseWriter, r *http.Request, ns *workspace, segs []string) {
	var body map[string]any
	if r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch {
		var ok bool
		if body, ok = readBody(w, r); !ok {
			return
		}
		if _, isForm := body[formMarker]; isForm {
			delete(body, formMarker)
			coerceForm(workspaceSchema.Fields, body)
		}
	}
	buf := &bufferedAnswer{header: w.Header()}
	e.mu.Lock()
	e.serveWorkspaces(buf, r, ns, segs, body)
	e.mu.Unlock()
	buf.writeTo(w)
}

func (e *Emulator) serveWorkspaces(w http.ResponseWriter, r *http.Request, ns *workspace, segs []string, body map[string]any) {
	inDefault := ns == nil || ns.db == nil
	if len(segs) > 1 {
		writeErr(w, errNotFound) // /workspaces/{ws}/entities and /meta are not emulated
		return
	}
	if len(segs) == 0 {
		if !inDefault {
			writeErr(w, errNotFound)
			return
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			all := make([]map[string]any, 0, len(e.workspaces))
			for _, ws := range e.workspaces {
				all = append(all, ws.ent)
			}
			sort.Slice(all, func(i, j int) bool { return all[i]["id"].(string) < all[j]["id"].(string) })
			e.paginate(w, r, "/workspaces", all)
		case http.MethodPost:
			e.saveWorkspace(w, r, nil, body)
		default:
			writeErr(w, methodNotAllowed)
		}
		return
	}
	ws := e.workspaceByKey(segs[0])
	if ws != nil && !inDefault && ws != ns {
		ws = nil // another workspace's entity is not visible from this one
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if ws == nil {
			writeErr(w, errNotFound)
			return
		}
		writeJSON(w, http.StatusOK, ws.ent)
	case http.MethodPut:
		if ws == nil {
			if isUUID(segs[0]) {
				body["id"] = segs[0]
			} else {
				body["name"] = segs[0]
			}
		} else if name, ok := body["name"]; ok && name != ws.name {
			writeErr(w, msgErr(http.StatusBadRequest, "Cannot rename a workspace"))
			return
		} else {
			body["id"], body["name"] = ws.ent["id"], ws.name
		}
		e.saveWorkspace(w, r, ws, body)
	case http.MethodPatch:
		if ws == nil {
			writeErr(w, errNotFound)
			return
		}
		if name, ok := body["name"]; ok && name != ws.name {
			writeErr(w, msgErr(http.StatusBadRequest, "Cannot rename a workspace"))
			return
		}
		merged := mergePatch(workspaceSchema.Fields, ws.ent, body)
		e.saveWorkspace(w, r, ws, merged)
	case http.MethodDelete:
		switch {
		case ws == nil:
			writeErr(w, errNotFound)
		case ws.db == nil:
			writeErr(w, msgErr(http.StatusBadRequest, "Cannot delete default workspace"))
		case !ws.db.empty():
			writeErr(w, msgErr(http.StatusBadRequest, "Workspace is not empty"))
		default:
			if e.dbless() {
				writeErr(w, dblessRefusal(r.Method, "workspaces"))
				return
			}
			delete(e.workspaces, ws.name)
			e.record(r.Method, r.URL.Path, "workspaces", ws.ent["id"].(string), ws.name, nil)
			w.WriteHeader(http.StatusNoContent)
		}
	default:
		writeErr(w, methodNotAllowed)
	}
}

// saveWorkspace validates body as the workspace old becomes (nil: a new one) and stores it.
// Caller holds mu.
func (e *Emulator) saveWorkspace(w http.ResponseWriter, r *http.Request, old *workspace, body map[string]any) {
	if e.dbless() {
		writeErr(w, dblessRefusal(r.Method, "workspaces"))
		return
	}
	ent, errs := normalize(e.prof, workspaceSchema, body, true)
	if errs != nil {
		writeErr(w, schemaViolation(errs))
		return
	}
	var oldEnt map[string]any
	if old != nil {
		oldEnt = old.ent
	}
	fillAuto(workspaceSchema, ent, e.opts.Now().Unix(), oldEnt)
	name := ent["name"].(string)
	if other := e.workspaces[name]; other != nil && other != old {
		writeErr(w, uniqueErr([]string{"name"}, ent))
		return
	}
	if old == nil && e.workspaceByKey(ent["id"].(string)) != nil {
		writeErr(w, uniqueErr([]string{"id"}, ent))
		return
	}
	status := http.StatusOK
	if old == nil {
		old = &workspace{name: name, db: newDB()}
		status = http.StatusCreated
	}
	old.ent = ent
	e.workspaces[name] = old
	e.record(r.Method, r.URL.Path, "workspaces", ent["id"].(string), name, nil)
	writeJSON(w, status, ent)
}

// dblessRefusal is DB-less Kong's answer to a write of an entity.
func dblessRefusal(method, entity string) *apiError {
	return errBody(http.StatusMethodNotAllowed, 12, "operation unsupported",
		fmt.Sprintf("cannot %s '%s' entities when not using a database", verb(method), entity), nil)
}

// Workspaces returns the names of the workspaces (Enterprise; nil for Kong OSS), sorted.
func (e *Emulator) Workspaces() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.workspaces == nil {
		return nil
	}
	return sortedKeys(e.workspaces)
}

// EntitiesIn is Entities of the workspace named ws ("" or "default": the default
// workspace); nil when there is no such workspace.
func (e *Emulator) EntitiesIn(ws, kind string) []map[string]any {
	s := schemaFor(kind)
	if s == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.db
	if ws != "" && ws != defaultWorkspace {
		w := e.workspaces[ws]
		if w == nil {
			return nil
		}
		d = w.db
	}
	var out []map[string]any
	for _, ent := range d.list(s.Name) {
		out = append(out, d.render(s, ent))
	}
	return out
}
