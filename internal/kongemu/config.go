package kongemu

import (
	"github.com/konductor/konductor/internal/kongrules"

	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"sigs.k8s.io/yaml"
)

// dblessNamespace seeds the UUIDv5 ids of declarative entities without an id.
var dblessNamespace = uuid.MustParse("8b5d53a5-5e3e-4a45-9d1d-6b1a0f6a1c4e")

// nested lists the child collections a declarative entity may contain:
// parent schema -> child key -> (child schema, foreign field on the child).
var nested = map[string]map[string][2]string{
	"services": {"routes": {"routes", "service"}, "plugins": {"plugins", "service"}},
	"routes":   {"plugins": {"plugins", "route"}},
	"consumers": {
		"plugins":                  {"plugins", "consumer"},
		"consumer_group_consumers": {"consumer_group_consumers", "consumer"},
		"mtls_auth_credentials":    {"mtls_auth_credentials", "consumer"},
		"keyauth_credentials":      {"keyauth_credentials", "consumer"},
		"basicauth_credentials":    {"basicauth_credentials", "consumer"},
		"hmacauth_credentials":     {"hmacauth_credentials", "consumer"},
		"jwt_secrets":              {"jwt_secrets", "consumer"},
		"acls":                     {"acls", "consumer"},
		"oauth2_credentials":       {"oauth2_credentials", "consumer"},
	},
	"upstreams":    {"targets": {"targets", "upstream"}},
	"certificates": {"snis": {"snis", "certificate"}},
	"consumer_groups": {
		"plugins":                  {"plugins", "consumer_group"},
		"consumer_group_consumers": {"consumer_group_consumers", "consumer_group"},
	},
}

// Top-level declarative keys Kong knows that the emulator accepts without
// modelling them.
var ignoredTopLevel = map[string]bool{"keys": true, "key_sets": true, "filter_chains": true, "parameters": true}

var metaKeys = map[string]bool{"_format_version": true, "_transform": true, "_comment": true, "_workspace": true}

type pathElem struct {
	key string
	idx int
}

// dItem is one entity of a declarative configuration being loaded.
type dItem struct {
	s      *schema
	input  map[string]any // as given, children removed
	path   []pathElem
	parent *dItem
	fkey   string // foreign field filled from the parent
	id     string
	errs   errTree
	whole  string // entity-level error replacing the entry (uniqueness)
	out    map[string]any
}

func (it *dItem) fail(field, msg string) {
	if it.errs == nil {
		it.errs = errTree{}
	}
	if field == "" {
		kongrules.AddEntityErr(it.errs, msg)
		return
	}
	if _, ok := it.errs[field]; !ok {
		it.errs[field] = msg
	}
}

// loader validates a declarative configuration into a fresh db.
type loader struct {
	p     profile
	items []*dItem
	top   errTree // errors not tied to an entity (unknown keys, bad shapes)
}

func (l *loader) walk(v any, s *schema, key string, prefix []pathElem, parent *dItem, fkey string, tree errTree) {
	arr, ok := v.([]any)
	if !ok {
		if m, isMap := v.(map[string]any); isMap && len(m) == 0 {
			return
		}
		tree[key] = "expected an array"
		return
	}
	for i, el := range arr {
		path := append(append([]pathElem(nil), prefix...), pathElem{key, i})
		if s.Name == "snis" {
			if name, isStr := el.(string); isStr {
				el = map[string]any{"name": name}
			}
		}
		m, ok := el.(map[string]any)
		if !ok {
			setAt(tree, path, "expected a record")
			continue
		}
		it := &dItem{s: s, input: map[string]any{}, path: path, parent: parent, fkey: fkey}
		children := map[string]any{}
		for k, x := range m {
			if c, isChild := nested[s.Name][k]; isChild && schemas[c[0]].has(l.p) {
				children[k] = x
				continue
			}
			it.input[k] = x
		}
		l.items = append(l.items, it)
		for _, ck := range sortedKeys(children) {
			c := nested[s.Name][ck]
			l.walk(children[ck], schemas[c[0]], ck, path, it, c[1], tree)
		}
	}
}

// setAt stores v in the error tree at path, creating records and sparse arrays.
func setAt(tree errTree, path []pathElem, v any) {
	cur := tree
	for i, p := range path {
		sp, _ := cur[p.key].(sparse)
		if sp == nil {
			if _, isStr := cur[p.key].(string); isStr {
				return
			}
			sp = sparse{}
			cur[p.key] = sp
		}
		if i == len(path)-1 {
			if existing, ok := sp[p.idx].(errTree); ok {
				if vt, isTree := v.(errTree); isTree {
					kongrules.MergeErr(existing, vt)
					return
				}
			}
			sp[p.idx] = v
			return
		}
		next, ok := sp[p.idx].(errTree)
		if !ok {
			if _, isStr := sp[p.idx].(string); isStr {
				return
			}
			next = errTree{}
			sp[p.idx] = next
		}
		cur = next
	}
}

// uniqueKeyString is the value of the declarative pk/unique key for messages.
func keyString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		return refID(x)
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// load validates cfg and returns the new db, or an error tree and flattened errors.
func (e *Emulator) load(cfg map[string]any) (*db, errTree, []any) {
	l := &loader{top: errTree{}, p: e.prof}
	tree := errTree{}
	fv, has := cfg["_format_version"]
	switch {
	case !has || fv == nil:
		tree["_format_version"] = "required field missing"
	default:
		s, ok := fv.(string)
		if !ok {
			tree["_format_version"] = "expected a string"
		} else if s != "1.1" && s != "2.1" && s != "3.0" {
			tree["_format_version"] = "expected one of: 1.1, 2.1, 3.0"
		}
	}
	if t, ok := cfg["_transform"]; ok && t != nil {
		if _, isBool := t.(bool); !isBool {
			tree["_transform"] = "expected a boolean"
		}
	}
	for _, k := range sortedKeys(cfg) {
		if metaKeys[k] || ignoredTopLevel[k] {
			continue
		}
		s := schemas[k]
		if s == nil || !s.has(e.prof) {
			tree[k] = "unknown field"
			continue
		}
		l.walk(cfg[k], s, k, nil, nil, "", tree)
	}

	// Ids: given, or a deterministic UUIDv5. Parents come before children.
	for _, it := range l.items {
		if s, ok := it.input["id"].(string); ok && isUUID(s) {
			it.id = s
			continue
		}
		var parts []string
		if it.parent != nil {
			parts = append(parts, it.parent.id)
		}
		switch {
		case it.s.EndpointKey != "" && it.s.EndpointKey != "id" && it.input[it.s.EndpointKey] != nil:
			parts = append(parts, keyString(it.input[it.s.EndpointKey]))
		case it.s.CacheKey != nil:
			for _, k := range it.s.CacheKey {
				v := it.input[k]
				if t, ok := v.(string); ok && it.s.Name == "targets" && k == "target" {
					v = normalizeTarget(t)
				}
				parts = append(parts, keyString(v))
			}
		default:
			for _, p := range it.path {
				parts = append(parts, p.key+"["+strconv.Itoa(p.idx)+"]")
			}
		}
		it.id = uuid.NewSHA1(dblessNamespace, []byte(it.s.Name+":"+strings.Join(parts, ":"))).String()
	}

	// Index for references by id and endpoint key.
	index := map[string]map[string]*dItem{}
	for _, it := range l.items {
		if index[it.s.Name] == nil {
			index[it.s.Name] = map[string]*dItem{}
		}
		index[it.s.Name][it.id] = it
		if k := it.s.EndpointKey; k != "" && k != "id" {
			if v, ok := it.input[k].(string); ok {
				if _, dup := index[it.s.Name][v]; !dup {
					index[it.s.Name][v] = it
				}
			}
		}
	}

	// Foreign keys, validation.
	for _, it := range l.items {
		in := kongrules.DeepCopy(it.input).(map[string]any)
		in["id"] = it.id
		if it.parent != nil {
			in[it.fkey] = map[string]any{"id": it.parent.id}
			it.input[it.fkey] = map[string]any{"id": it.parent.id}
		}
		for _, f := range it.s.foreignFields(&e.prof) {
			if it.parent != nil && f.Name == it.fkey {
				continue
			}
			v, ok := in[f.Name]
			if !ok || v == nil {
				continue
			}
			var ref string
			switch x := v.(type) {
			case string:
				ref = x
			case map[string]any:
				if id, ok := x["id"].(string); ok {
					ref = id
				} else if k, ok := x[schemas[f.Ref].EndpointKey].(string); ok {
					ref = k
				} else {
					continue // leave it to the schema validation
				}
			default:
				continue
			}
			target := index[f.Ref][ref]
			if target == nil {
				it.fail(f.Name, fmt.Sprintf("invalid reference '%s: %s' (no such entry in '%s')", f.Name, ref, f.Ref))
				delete(in, f.Name)
				continue
			}
			in[f.Name] = map[string]any{"id": target.id}
			it.input[f.Name] = map[string]any{"id": target.id}
		}
		if it.s.Name == "consumer_group_consumers" && it.input["id"] == nil {
			// The id the Admin API knows a membership by (consumergroups.go).
			it.id = membershipID(refID(in["consumer_group"]), refID(in["consumer"]))
			in["id"] = it.id
		}
		out, errs := normalize(e.prof, it.s, in, true)
		it.out = out
		if errs != nil {
			if it.errs == nil {
				it.errs = errTree{}
			}
			kongrules.MergeErr(it.errs, errs)
		}
	}

	// Uniqueness within the configuration.
	seen := map[string]bool{}
	for _, it := range l.items {
		if it.out == nil {
			continue
		}
		check := func(label, value string) bool {
			k := it.s.Name + "\x00" + label + "\x00" + value
			if seen[k] {
				it.whole = fmt.Sprintf("uniqueness violation: '%s' entity with %s set to '%s' already declared", it.s.Name, label, value)
				return false
			}
			seen[k] = true
			return true
		}
		dup := false
		for _, f := range it.s.Fields {
			if f.Unique {
				if v, ok := it.out[f.Name].(string); ok {
					if !check(f.Name, v) {
						dup = true
						break
					}
				}
			}
		}
		if dup {
			continue
		}
		if !check("primary key", it.id) {
			continue
		}
		if it.whole == "" && it.s.CacheKey != nil && it.errs == nil {
			var parts []string
			for _, k := range it.s.CacheKey {
				parts = append(parts, keyString(it.out[k]))
			}
			check("cache_key", strings.Join(parts, ":"))
		}
	}

	var flat []any
	for _, it := range l.items {
		if it.whole == "" && it.errs == nil {
			continue
		}
		if it.whole != "" {
			setAt(tree, it.path, it.whole)
		} else {
			setAt(tree, it.path, it.errs)
		}
		flat = append(flat, flattenItem(it))
	}
	if len(tree) > 0 {
		// Top-level errors (unknown keys, format version) are not entities.
		return nil, tree, flat
	}

	d := newDB()
	now := e.opts.Now().Unix()
	for _, it := range l.items {
		ent := it.out
		ent["id"] = it.id
		fillAuto(it.s, ent, now, nil)
		if it.s.Name == "basicauth_credentials" {
			hashPassword(ent)
		}
		if it.s.Name == "certificates" {
			if names, ok := ent["snis"].([]any); ok {
				for _, n := range names {
					sid := uuid.NewSHA1(dblessNamespace, []byte("snis:"+it.id+":"+fmt.Sprint(n))).String()
					d.put("snis", map[string]any{"id": sid, "name": n, "certificate": map[string]any{"id": it.id},
						"tags": nil, "created_at": now, "updated_at": now})
				}
			}
			delete(ent, "snis")
		}
		d.put(it.s.Name, ent)
	}
	return d, nil, nil
}

// flattenItem renders one flattened_errors entry.
func flattenItem(it *dItem) map[string]any {
	entity := kongrules.DeepCopy(it.input).(map[string]any)
	out := map[string]any{
		"entity_type": it.s.Singular,
		"entity":      entity,
	}
	if id, ok := it.input["id"].(string); ok && isUUID(id) {
		out["entity_id"] = id
	}
	if n, ok := it.input["name"].(string); ok && n != "" {
		out["entity_name"] = n
	}
	if tags, ok := it.input["tags"].([]any); ok {
		all := true
		for _, t := range tags {
			if _, isStr := t.(string); !isStr {
				all = false
			}
		}
		if all {
			out["entity_tags"] = tags
		}
	}
	var errs []any
	if it.whole != "" {
		errs = append(errs, map[string]any{"type": "entity", "message": it.whole})
	}
	if it.errs != nil {
		flattenErrs(it.errs, "", &errs)
	}
	out["errors"] = errs
	return out
}

func flattenErrs(t any, prefix string, out *[]any) {
	kongrules.WalkErrors(t, prefix, func(field string, entity bool, msg any) {
		if entity {
			*out = append(*out, map[string]any{"type": "entity", "message": msg})
			return
		}
		*out = append(*out, map[string]any{"type": "field", "field": field, "message": msg})
	})
}

// luaPretty renders an error tree the way Kong prints it in messages.
func luaPretty(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case errTree:
		parts := []string{}
		for _, k := range sortedKeys(x) {
			name := k
			if strings.ContainsAny(k, "@-.") {
				name = "[" + strconv.Quote(k) + "]"
			}
			parts = append(parts, name+"="+luaPretty(x[k]))
		}
		return "{" + strings.Join(parts, ",") + "}"
	case sparse:
		idx := make([]int, 0, len(x))
		for i := range x {
			idx = append(idx, i)
		}
		sort.Ints(idx)
		dense := len(idx) > 0 && idx[len(idx)-1] == len(idx)-1
		parts := []string{}
		for _, i := range idx {
			if dense {
				parts = append(parts, luaPretty(x[i]))
			} else {
				parts = append(parts, fmt.Sprintf("[%d]=%s", i+1, luaPretty(x[i])))
			}
		}
		return "{" + strings.Join(parts, ",") + "}"
	case []any:
		parts := []string{}
		for _, e := range x {
			parts = append(parts, luaPretty(e))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	return fmt.Sprint(v)
}

func truthy(s string) bool {
	switch strings.ToLower(s) {
	case "true", "1", "on", "yes":
		return true
	}
	return false
}

var errNoDB = msgErr(http.StatusBadRequest, "this endpoint is only available when Kong is configured to not use a database")

// handleConfig serves GET and POST /config.
func (e *Emulator) handleConfig(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		if !e.dbless() {
			writeErr(w, errNoDB)
			return
		}
		e.mu.Lock()
		y, err := yaml.Marshal(e.exportConfig())
		e.mu.Unlock()
		if err != nil {
			writeErr(w, msgErr(http.StatusInternalServerError, "An unexpected error occurred"))
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"config": string(y)})
	case http.MethodPost:
		if !e.dbless() {
			writeErr(w, errNoDB)
			return
		}
		e.postConfig(w, r)
	default:
		writeErr(w, methodNotAllowed)
	}
}

func md5hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

func (e *Emulator) postConfig(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	flatten := truthy(q.Get("flatten_errors"))
	checkHash := q.Get("check_hash") == "1"
	raw, err := io.ReadAll(io.LimitReader(r.Body, 256<<20))
	if err != nil {
		writeErr(w, msgErr(http.StatusBadRequest, "Cannot read body"))
		return
	}
	ct := strings.ToLower(strings.TrimSpace(strings.Split(r.Header.Get("Content-Type"), ";")[0]))
	var cfg map[string]any
	var hash string
	parseString := func(s string) bool {
		// JSON is YAML; read as JSON when it looks like JSON (much faster for a large one).
		j, err := []byte(s), error(nil)
		if t := strings.TrimSpace(s); !strings.HasPrefix(t, "{") || !json.Valid([]byte(t)) {
			j, err = yaml.YAMLToJSON([]byte(s))
		}
		if err == nil {
			var v any
			v, err = decodeJSON(j)
			if err == nil {
				m, ok := v.(map[string]any)
				if !ok {
					err = fmt.Errorf("expected an object")
				}
				cfg = m
			}
		}
		if err != nil {
			writeErr(w, errBody(http.StatusBadRequest, 14, "invalid declarative configuration",
				"failed parsing declarative configuration: "+err.Error(), map[string]any{}))
			return false
		}
		hash = md5hex([]byte(s))
		return true
	}
	switch {
	case len(strings.TrimSpace(string(raw))) == 0:
		writeErr(w, msgErr(http.StatusBadRequest, "expected a declarative configuration"))
		return
	case ct == "application/x-www-form-urlencoded" || ct == "multipart/form-data":
		cfgStr, ok := formConfig(r.Header.Get("Content-Type"), raw)
		if !ok {
			writeErr(w, msgErr(http.StatusBadRequest, "expected a declarative configuration"))
			return
		}
		if !parseString(cfgStr) {
			return
		}
	case ct == "application/yaml" || ct == "text/yaml":
		if !parseString(string(raw)) {
			return
		}
	case ct == "" || ct == "application/json":
		v, err := decodeJSON(raw)
		m, ok := v.(map[string]any)
		if err != nil || !ok {
			writeErr(w, msgErr(http.StatusBadRequest, "Cannot parse JSON body"))
			return
		}
		if _, ok := m["_format_version"]; ok {
			cfg = m
			canon, _ := json.Marshal(m)
			hash = md5hex(canon)
		} else if s, ok := m["config"].(string); ok {
			if !parseString(s) {
				return
			}
		} else if !parseString(string(raw)) {
			// Kong falls back to the raw body as the configuration string.
			return
		}
	default:
		writeErr(w, msgErr(http.StatusUnsupportedMediaType, "Unsupported Media Type"))
		return
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.rejectNext) > 0 {
		rj := e.rejectNext[0]
		e.rejectNext = e.rejectNext[1:]
		writeJSON(w, http.StatusBadRequest, rejectionBody(rj, flatten))
		return
	}
	d, tree, flat := e.load(cfg)
	if tree != nil {
		body := map[string]any{
			"code":    14,
			"name":    "invalid declarative configuration",
			"message": "declarative config is invalid: " + luaPretty(tree),
			"fields":  tree,
		}
		if flatten {
			if flat == nil {
				flat = []any{}
			}
			body["flattened_errors"] = flat
		}
		writeJSON(w, http.StatusBadRequest, body)
		return
	}
	if d.empty() {
		hash = emptyHash
	}
	if checkHash && hash == e.configHash {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	e.db = d
	e.configHash = hash
	e.rawConfig = cfg
	e.record(r.Method, r.URL.Path, "config", hash, "", nil)
	if e.opts.AuditConfigRoutes {
		var tags [][]string
		for _, rt := range d.ents["routes"] {
			var ts []string
			list, _ := rt["tags"].([]any)
			for _, t := range list {
				if s, ok := t.(string); ok {
					ts = append(ts, s)
				}
			}
			tags = append(tags, ts)
		}
		e.audit[len(e.audit)-1].RouteTags = tags
	}
	resp := map[string]any{}
	for _, name := range entityOrder {
		if len(d.ents[name]) == 0 {
			continue
		}
		m := map[string]any{}
		for id, ent := range d.ents[name] {
			m[id] = d.render(schemas[name], ent)
		}
		resp[name] = m
	}
	writeJSON(w, http.StatusCreated, resp)
}

func rejectionBody(rj ConfigRejection, flatten bool) map[string]any {
	etype := rj.EntityType
	if etype == "" {
		etype = "service"
	}
	var errs []any
	fields := errTree{}
	if rj.Field == "" {
		errs = append(errs, map[string]any{"type": "entity", "message": rj.Message})
		kongrules.AddEntityErr(fields, rj.Message)
	} else {
		errs = append(errs, map[string]any{"type": "field", "field": rj.Field, "message": rj.Message})
		fields[rj.Field] = rj.Message
	}
	entity := map[string]any{}
	item := map[string]any{"entity_type": etype, "entity": entity, "errors": errs}
	if rj.EntityID != "" {
		entity["id"] = rj.EntityID
		item["entity_id"] = rj.EntityID
	}
	if rj.EntityName != "" {
		entity["name"] = rj.EntityName
		item["entity_name"] = rj.EntityName
	}
	if rj.EntityTags != nil {
		tags := kongrules.Strs(rj.EntityTags...)
		entity["tags"] = tags
		item["entity_tags"] = tags
	}
	tree := errTree{etype + "s": sparse{0: fields}}
	body := map[string]any{
		"code":    14,
		"name":    "invalid declarative configuration",
		"message": "declarative config is invalid: " + luaPretty(tree),
		"fields":  tree,
	}
	if flatten {
		body["flattened_errors"] = []any{item}
	}
	return body
}

// exportConfig renders the loaded entities as a flat declarative config. Caller holds mu.
func (e *Emulator) exportConfig() map[string]any {
	out := map[string]any{"_format_version": "3.0", "_transform": false}
	for _, name := range entityOrder {
		list := e.db.list(name)
		if len(list) == 0 {
			continue
		}
		arr := make([]any, 0, len(list))
		for _, ent := range list {
			m := map[string]any{}
			for k, v := range ent {
				if v == nil {
					continue
				}
				if ref, ok := v.(map[string]any); ok && schemas[name].field(k) != nil && schemas[name].field(k).Type == kongrules.Foreign {
					m[k] = ref["id"]
					continue
				}
				m[k] = v
			}
			arr = append(arr, m)
		}
		out[name] = arr
	}
	return out
}

// formConfig reads the "config" field of a form-encoded or multipart body
// (curl -d config=... or -F config=@kong.yml).
func formConfig(contentType string, raw []byte) (string, bool) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", false
	}
	if mt == "application/x-www-form-urlencoded" {
		vals, err := url.ParseQuery(string(raw))
		if err != nil || vals.Get("config") == "" {
			return "", false
		}
		return vals.Get("config"), true
	}
	mr := multipart.NewReader(bytes.NewReader(raw), params["boundary"])
	for {
		part, err := mr.NextPart()
		if err != nil {
			return "", false
		}
		if part.FormName() == "config" {
			b, err := io.ReadAll(part)
			return string(b), err == nil && len(b) > 0
		}
	}
}
