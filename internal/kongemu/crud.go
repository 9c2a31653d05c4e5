package kongemu

import (
	"github.com/konductor/konductor/internal/kongrules"

	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// childRoutes lists nested collections: parent schema -> path segment -> (child schema, foreign field).
var childRoutes = map[string]map[string][2]string{
	"services":     {"routes": {"routes", "service"}, "plugins": {"plugins", "service"}},
	"routes":       {"plugins": {"plugins", "route"}},
	"certificates": {"snis": {"snis", "certificate"}},
	"upstreams":    {"targets": {"targets", "upstream"}},
	"consumers": {
		"plugins":    {"plugins", "consumer"},
		"key-auth":   {"keyauth_credentials", "consumer"},
		"basic-auth": {"basicauth_credentials", "consumer"},
		"hmac-auth":  {"hmacauth_credentials", "consumer"},
		"jwt":        {"jwt_secrets", "consumer"},
		"oauth2":     {"oauth2_credentials", "consumer"},
		"acls":       {"acls", "consumer"},
		"mtls-auth":  {"mtls_auth_credentials", "consumer"},
	},
	"consumer_groups": {"plugins": {"plugins", "consumer_group"}},
}

// crudTarget is what a CRUD path designates.
type crudTarget struct {
	s        *schema
	parent   map[string]any // nested: the parent entity
	parentS  *schema
	fkey     string // nested: the child's foreign field to the parent
	key      string // item key, "" for a collection
	item     bool
	basePath string
	// keepPassword: a PATCH without a password keeps the stored hash.
	keepPassword bool
}

func verb(method string) string {
	switch method {
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "create or update"
	case http.MethodPatch:
		return "update"
	case http.MethodDelete:
		return "remove"
	}
	return "access"
}

// handleCRUD serves entity collections and items. Caller does not hold mu.
func (e *Emulator) handleCRUD(w http.ResponseWriter, r *http.Request, segs []string) {
	if segs[0] == "plugins" && len(segs) == 2 && segs[1] == "enabled" {
		if r.Method != http.MethodGet {
			writeErr(w, methodNotAllowed)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"enabled_plugins": kongrules.Strs(kongrules.PluginNames(e.prof.enterprise)...)})
		return
	}
	var body map[string]any
	if r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch {
		var ok bool
		if body, ok = readBody(w, r); !ok {
			return
		}
	}
	// The answer is written to the connection after mu is released: a client reading a
	// large page slowly holds no other request back (Kong's workers answer concurrently).
	buf := &bufferedAnswer{header: w.Header()}
	e.mu.Lock()
	if restore, ok := e.enter(buf, r, segs[0]); ok {
		e.serveCRUD(buf, r, segs, body)
		restore()
	}
	e.mu.Unlock()
	buf.writeTo(w)
}

// serveCRUD is handleCRUD's work under mu.
func (e *Emulator) serveCRUD(w http.ResponseWriter, r *http.Request, segs []string, body map[string]any) {
	if e.isConsumerGroupSpecial(r, segs) {
		e.consumerGroupSpecial(w, r, segs, body)
		return
	}
	t, aerr := e.resolve(segs)
	if aerr != nil {
		writeErr(w, aerr)
		return
	}
	if p := pathPrefix(r); p != "" {
		t.basePath = p + t.basePath
	}
	if _, isForm := body[formMarker]; isForm {
		delete(body, formMarker)
		fs := t.s.Fields
		if t.s.Name == "plugins" {
			name, _ := body["name"].(string)
			if name == "" && t.item {
				if old := e.db.lookup(t.s, t.key); old != nil {
					name, _ = old["name"].(string)
				}
			}
			fs = pluginFields(e.prof, name)
		}
		coerceForm(fs, body)
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && e.dbless() {
		if (t.item && (r.Method == http.MethodPost)) || (!t.item && r.Method != http.MethodPost) {
			writeErr(w, methodNotAllowed)
			return
		}
		writeErr(w, dblessRefusal(r.Method, t.s.Name))
		return
	}
	if !t.item {
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			e.list(w, r, t)
		case http.MethodPost:
			e.create(w, r, t, body)
		default:
			writeErr(w, methodNotAllowed)
		}
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		ent, aerr := e.find(t)
		if aerr != nil {
			writeErr(w, aerr)
			return
		}
		if ent == nil {
			writeErr(w, errNotFound)
			return
		}
		writeJSON(w, http.StatusOK, e.db.render(t.s, ent))
	case http.MethodPut:
		e.upsert(w, r, t, body)
	case http.MethodPatch:
		e.patch(w, r, t, body)
	case http.MethodDelete:
		e.remove(w, r, t)
	default:
		writeErr(w, methodNotAllowed)
	}
}

// resolve maps path segments to a crudTarget. Caller holds mu.
func (e *Emulator) resolve(segs []string) (*crudTarget, *apiError) {
	if len(segs) > 4 {
		return nil, errNotFound
	}
	s := schemaByPath[segs[0]]
	if s == nil || !s.has(e.prof) || s.NoAPI {
		return nil, errNotFound
	}
	if len(segs) <= 2 {
		if s.Name == "targets" {
			return nil, errNotFound
		}
		t := &crudTarget{s: s, basePath: "/" + segs[0]}
		if len(segs) == 2 {
			t.key, t.item = segs[1], true
		}
		return t, nil
	}
	c, ok := childRoutes[s.Name][segs[2]]
	if !ok || !schemas[c[0]].has(e.prof) {
		return nil, errNotFound
	}
	if aerr := checkKey(s, segs[1]); aerr != nil {
		return nil, aerr
	}
	parent := e.db.lookup(s, segs[1])
	if parent == nil {
		return nil, errNotFound
	}
	t := &crudTarget{s: schemas[c[0]], parent: parent, parentS: s, fkey: c[1],
		basePath: "/" + segs[0] + "/" + segs[1] + "/" + segs[2]}
	if len(segs) == 4 {
		t.key, t.item = segs[3], true
	}
	return t, nil
}

// checkKey rejects a non-UUID key for entities without an endpoint key.
func checkKey(s *schema, key string) *apiError {
	if isUUID(key) || (s.EndpointKey != "" && s.EndpointKey != "id") || s.Name == "certificates" {
		return nil
	}
	return errBody(http.StatusBadRequest, 1, "invalid primary key",
		fmt.Sprintf("invalid primary key: '{id=%q}'", key), map[string]any{"id": "expected a valid UUID"})
}

// find looks up the item a target designates; nil when absent or under another parent.
func (e *Emulator) find(t *crudTarget) (map[string]any, *apiError) {
	if aerr := checkKey(t.s, t.key); aerr != nil {
		return nil, aerr
	}
	var ent map[string]any
	if t.s.Name == "targets" && t.parent != nil && !isUUID(t.key) {
		want := normalizeTarget(t.key)
		pid, _ := t.parent["id"].(string)
		for _, id := range e.db.referencing("targets", "upstream", pid).list() {
			if x := e.db.ents["targets"][id]; x["target"] == t.key || x["target"] == want {
				ent = x
			}
		}
	} else {
		ent = e.db.lookup(t.s, t.key)
	}
	if ent != nil && t.parent != nil && refID(ent[t.fkey]) != t.parent["id"] {
		return nil, nil
	}
	return ent, nil
}

func parseTags(q url.Values) ([]string, bool, *apiError) {
	raw := q.Get("tags")
	if raw == "" {
		return nil, false, nil
	}
	bad := func(msg string) *apiError {
		return errBody(http.StatusBadRequest, 11, "invalid options", "invalid option (tags: "+msg+")",
			nil).with("options", map[string]any{"tags": msg})
	}
	hasAnd, hasOr := strings.Contains(raw, ","), strings.Contains(raw, "/")
	if hasAnd && hasOr {
		return nil, false, bad("invalid filter syntax")
	}
	sep := ","
	if hasOr {
		sep = "/"
	}
	tags := strings.Split(raw, sep)
	if len(tags) > 5 {
		return nil, false, bad("cannot query more than 5 tags")
	}
	for _, t := range tags {
		if t == "" {
			return nil, false, bad("invalid filter syntax")
		}
	}
	return tags, hasOr, nil
}

func (a *apiError) with(k string, v any) *apiError {
	a.Body[k] = v
	return a
}

func matchTags(ent map[string]any, tags []string, or bool) bool {
	have := map[string]bool{}
	for _, t := range entityTags(ent) {
		have[t] = true
	}
	for _, t := range tags {
		if have[t] && or {
			return true
		}
		if !have[t] && !or {
			return false
		}
	}
	return !or
}

// list serves a collection. Caller holds mu.
func (e *Emulator) list(w http.ResponseWriter, r *http.Request, t *crudTarget) {
	var tags []string
	var or bool
	// Kong reads the tags option only for an entity with a tags field (extract_options in
	// kong/api/endpoints.lua) and ignores it otherwise: GET /licenses?tags=x lists every
	// license, which is why a dump with select tags still sees all of them.
	if t.parent == nil && t.s.field("tags") != nil {
		var aerr *apiError
		if tags, or, aerr = parseTags(r.URL.Query()); aerr != nil {
			writeErr(w, aerr)
			return
		}
	}
	// The ids in order; only the page's entities are rendered.
	var ids []string
	switch {
	case t.parent != nil:
		pid, _ := t.parent["id"].(string)
		ids = e.db.referencing(t.s.Name, t.fkey, pid).list()
	case tags != nil:
		ids = e.db.taggedIDs(t.s.Name, tags, or)
	default:
		ids = e.db.sortedIDs(t.s.Name)
	}
	e.paginateFunc(w, r, t.basePath, len(ids), func(i int) []byte {
		return e.db.renderJSON(t.s, e.db.ents[t.s.Name][ids[i]])
	})
}

// paginate writes {data, offset, next} for rows.
func (e *Emulator) paginate(w http.ResponseWriter, r *http.Request, basePath string, rows []map[string]any) {
	e.paginateFunc(w, r, basePath, len(rows), func(i int) []byte { return marshalJSON(rows[i]) })
}

// paginateFunc writes {data, offset, next} for n rows, calling row (a row's JSON) only for
// the page's rows. The page is the bytes json.Marshal gives for the map {data, next,
// offset} (keys in order), assembled from the rows' bytes, which the database keeps per
// entity (db.renderJSON) rather than encoding every entity of every page again.
func (e *Emulator) paginateFunc(w http.ResponseWriter, r *http.Request, basePath string, n int, row func(i int) []byte) {
	q := r.URL.Query()
	size := 100
	if s := q.Get("size"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			writeErr(w, errBody(http.StatusBadRequest, 9, "invalid size", "size must be an integer between 1 and 1000", nil))
			return
		}
		size = n
	}
	start := 0
	if off := q.Get("offset"); off != "" {
		b, err := base64.RawURLEncoding.DecodeString(off)
		n, err2 := strconv.Atoi(string(b))
		if err != nil || err2 != nil || n < 0 {
			writeErr(w, errBody(http.StatusBadRequest, 7, "invalid offset",
				fmt.Sprintf("'%s' is not a valid offset: bad base64 encoding", off), nil))
			return
		}
		start = n
	}
	if start > n {
		start = n
	}
	end := start + size
	if end > n {
		end = n
	}
	rows := make([][]byte, 0, end-start)
	capacity := 128 + 2*len(basePath)
	for i := start; i < end; i++ {
		rows = append(rows, row(i))
		capacity += len(rows[len(rows)-1]) + 1
	}
	out := append(make([]byte, 0, capacity), `{"data":[`...)
	for i, b := range rows {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, b...)
	}
	out = append(out, `],"next":`...)
	if end < n {
		off := base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end)))
		next := basePath + "?offset=" + url.QueryEscape(off) + "&size=" + strconv.Itoa(size)
		if tg := q.Get("tags"); tg != "" {
			next += "&tags=" + url.QueryEscape(tg)
		}
		out = append(out, marshalJSON(next)...)
		out = append(out, `,"offset":`...)
		out = append(out, marshalJSON(off)...)
	} else {
		out = append(out, "null"...)
	}
	out = append(out, '}')
	writeJSONBytes(w, http.StatusOK, out)
}

// prepare validates body as a new version of an entity (old is nil on insert)
// and returns the stored form and the certificate's SNI names (nil: none given).
func (e *Emulator) prepare(t *crudTarget, body map[string]any, old map[string]any) (map[string]any, []any, *apiError) {
	if t.parent != nil {
		body[t.fkey] = map[string]any{"id": t.parent["id"]}
	}
	ent, errs := normalize(e.prof, t.s, body, true)
	if errs != nil {
		return nil, nil, schemaViolation(errs)
	}
	if aerr := e.db.resolveForeign(t.s, ent); aerr != nil {
		return nil, nil, aerr
	}
	var snis []any
	if t.s.Name == "certificates" {
		snis, _ = ent["snis"].([]any)
		delete(ent, "snis")
	}
	fillAuto(t.s, ent, e.opts.Now().Unix(), old)
	if t.s.Name == "basicauth_credentials" && !t.keepPassword {
		hashPassword(ent)
	}
	id := ent["id"].(string)
	if old == nil && (e.db.get(t.s.Name, id) != nil || e.idInOtherWorkspace(t.s.Name, id)) {
		return nil, nil, uniqueErr([]string{"id"}, ent)
	}
	if aerr := e.db.checkUnique(t.s, ent, id); aerr != nil {
		return nil, nil, aerr
	}
	for _, n := range snis {
		name, ok := n.(string)
		if !ok {
			continue // only strings pass validation; no stored name equals anything else
		}
		for _, sid := range e.db.byValue("snis", "name", name).list() {
			sni := e.db.ents["snis"][sid]
			if refID(sni["certificate"]) != id {
				msg := fmt.Sprintf("%s already associated with existing certificate '%s'", n, refID(sni["certificate"]))
				return nil, nil, errBody(http.StatusBadRequest, 2, "schema violation",
					"schema violation (snis: "+msg+")", map[string]any{"snis": msg})
			}
		}
	}
	return ent, snis, nil
}

// store saves ent and, for certificates, replaces its SNIs by names.
func (e *Emulator) store(s *schema, ent map[string]any, snis []any) {
	id := ent["id"].(string)
	e.db.put(s.Name, ent)
	if s.Name != "certificates" {
		return
	}
	keep := map[any]bool{}
	for _, n := range snis {
		keep[n] = true
	}
	have := map[any]bool{}
	for _, sid := range e.db.referencing("snis", "certificate", id).list() {
		sni := e.db.ents["snis"][sid]
		if !keep[sni["name"]] {
			e.db.del("snis", sid)
			continue
		}
		have[sni["name"]] = true
	}
	now := e.opts.Now().Unix()
	for _, n := range snis {
		if have[n] {
			continue
		}
		sni := map[string]any{"name": n, "certificate": map[string]any{"id": id}, "tags": nil}
		fillAuto(schemas["snis"], sni, now, nil)
		e.db.put("snis", sni)
	}
}

func (e *Emulator) audited(r *http.Request, s *schema, ent map[string]any) {
	id, _ := ent["id"].(string)
	e.record(r.Method, r.URL.Path, s.Name, id, entityName(s, ent), entityTags(ent))
}

// save validates body as the new state of the entity (old: its current state, nil for a new
// one), stores and audits it, and answers with status and the stored entity.
func (e *Emulator) save(w http.ResponseWriter, r *http.Request, t *crudTarget, body, old map[string]any, status int) {
	ent, snis, aerr := e.prepare(t, body, old)
	if aerr != nil {
		writeErr(w, aerr)
		return
	}
	e.store(t.s, ent, snis)
	e.audited(r, t.s, ent)
	writeJSON(w, status, e.db.render(t.s, ent))
}

func (e *Emulator) create(w http.ResponseWriter, r *http.Request, t *crudTarget, body map[string]any) {
	e.save(w, r, t, body, nil, http.StatusCreated)
}

func (e *Emulator) upsert(w http.ResponseWriter, r *http.Request, t *crudTarget, body map[string]any) {
	old, aerr := e.find(t)
	if aerr != nil {
		writeErr(w, aerr)
		return
	}
	if old == nil && t.parent != nil && e.db.lookup(t.s, t.key) != nil {
		// exists under another parent
		writeErr(w, errNotFound)
		return
	}
	if t.s.Name == "targets" && old == nil {
		writeErr(w, errNotFound)
		return
	}
	switch {
	case old != nil:
		body["id"] = old["id"]
	case isUUID(t.key):
		body["id"] = t.key
	default:
		if t.s.EndpointKey != "" && t.s.EndpointKey != "id" {
			body[t.s.EndpointKey] = t.key
		}
	}
	if old != nil && !isUUID(t.key) && t.s.EndpointKey != "" && t.s.EndpointKey != "id" && t.s.Name != "targets" {
		body[t.s.EndpointKey] = t.key
	}
	e.save(w, r, t, body, old, http.StatusOK)
}

// mergePatch merges patch into base: records recursively, everything else replaced.
func mergePatch(fs []*field, base, patch map[string]any) map[string]any {
	out := kongrules.DeepCopy(base).(map[string]any)
	for k, v := range patch {
		var f *field
		for _, x := range fs {
			if x.Name == k {
				f = x
			}
		}
		bm, bok := out[k].(map[string]any)
		pm, pok := v.(map[string]any)
		if f != nil && f.Type == kongrules.Record && bok && pok {
			out[k] = mergePatch(f.Fields, bm, pm)
			continue
		}
		out[k] = kongrules.DeepCopy(v)
	}
	return out
}

func (e *Emulator) patch(w http.ResponseWriter, r *http.Request, t *crudTarget, body map[string]any) {
	old, aerr := e.find(t)
	if aerr != nil {
		writeErr(w, aerr)
		return
	}
	if old == nil {
		if isUUID(t.key) {
			writeErr(w, errBody(http.StatusNotFound, 6, "not found",
				fmt.Sprintf("could not find the entity with primary key '{id=%q}'", t.key), nil))
			return
		}
		writeErr(w, errNotFound)
		return
	}
	fs := t.s.Fields
	if t.s.Name == "plugins" {
		name, _ := old["name"].(string)
		fs = pluginFields(e.prof, name)
	}
	base := kongrules.DeepCopy(old).(map[string]any)
	delete(base, "updated_at")
	merged := mergePatch(fs, base, body)
	if t.s.Name == "certificates" {
		if _, ok := body["snis"]; !ok {
			delete(merged, "snis")
		}
	}
	merged["id"] = old["id"]
	_, newPassword := body["password"]
	t.keepPassword = !newPassword
	e.save(w, r, t, merged, old, http.StatusOK)
}

func (e *Emulator) remove(w http.ResponseWriter, r *http.Request, t *crudTarget) {
	ent, aerr := e.find(t)
	if aerr != nil {
		writeErr(w, aerr)
		return
	}
	if ent == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	gone, aerr := e.db.delete(t.s.Name, ent["id"].(string))
	if aerr != nil {
		writeErr(w, aerr)
		return
	}
	// The request's own entity first, then what cascaded with it.
	e.audited(r, t.s, ent)
	for _, g := range gone[:len(gone)-1] {
		e.audited(r, schemas[g.kind], g.ent)
	}
	w.WriteHeader(http.StatusNoContent)
}

// bufferedAnswer is an http.ResponseWriter that keeps the status and body until writeTo.
type bufferedAnswer struct {
	header http.Header
	status int
	body   []byte
}

func (b *bufferedAnswer) Header() http.Header { return b.header }

func (b *bufferedAnswer) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *bufferedAnswer) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	b.body = append(b.body, p...)
	return len(p), nil
}

// writeTo sends the answer kept to w.
func (b *bufferedAnswer) writeTo(w http.ResponseWriter) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	w.WriteHeader(b.status)
	if len(b.body) > 0 {
		_, _ = w.Write(b.body)
	}
}
