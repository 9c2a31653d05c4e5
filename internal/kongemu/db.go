package kongemu

import (
	"github.com/konductor/konductor/internal/kongrules"

	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// db holds entities by schema name and id. It is not safe for concurrent
// use; the Emulator's mutex guards it.
// Writes go through put and del, which keep the indexes (index.go) in step.
type db struct {
	ents map[string]map[string]map[string]any
	idx  map[string]*kindIndex
	// encoded holds entities' JSON by schema name and id (renderJSON); put and del drop it.
	encoded map[string]map[string][]byte
	// version counts the writes (put and del): the proxy rebuilds its router when it moves.
	version uint64
}

func newDB() *db {
	d := &db{ents: map[string]map[string]map[string]any{}, idx: map[string]*kindIndex{},
		encoded: map[string]map[string][]byte{}}
	for name, s := range schemas {
		d.ents[name] = map[string]map[string]any{}
		d.idx[name] = newKindIndex(s)
	}
	return d
}

func (d *db) empty() bool {
	for _, m := range d.ents {
		if len(m) > 0 {
			return false
		}
	}
	return true
}

func (d *db) get(kind, id string) map[string]any { return d.ents[kind][id] }

// list returns the entities of kind ordered by id (Kong's primary key order).
func (d *db) list(kind string) []map[string]any {
	m := d.ents[kind]
	ids := d.sortedIDs(kind)
	out := make([]map[string]any, len(ids))
	for i, id := range ids {
		out[i] = m[id]
	}
	return out
}

func isUUID(s string) bool {
	_, err := uuid.Parse(s)
	return err == nil && len(s) == 36
}

// lookup finds an entity by id or endpoint key.
func (d *db) lookup(s *schema, key string) map[string]any {
	if isUUID(key) {
		return d.ents[s.Name][key]
	}
	if s.Name == "certificates" {
		if sid := d.byValue("snis", "name", key).other(""); sid != "" {
			return d.ents["certificates"][refID(d.ents["snis"][sid]["certificate"])]
		}
		return nil
	}
	if s.EndpointKey == "" || s.EndpointKey == "id" {
		return nil
	}
	if id := d.byValue(s.Name, s.EndpointKey, key).other(""); id != "" {
		return d.ents[s.Name][id]
	}
	return nil
}

func refID(v any) string {
	m, _ := v.(map[string]any)
	id, _ := m["id"].(string)
	return id
}

// luaTable renders a key/value set the way Kong prints primary keys in messages.
func luaTable(keys []string, vals map[string]any) string {
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+luaValue(vals[k]))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func luaValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("%q", x)
	case map[string]any:
		return luaTable(sortedKeys(x), x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = luaValue(e)
		}
		return "{" + strings.Join(parts, ",") + "}"
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// apiError is an Admin API error response.
type apiError struct {
	Status int
	Body   map[string]any
}

func errBody(status, code int, name, message string, fields any) *apiError {
	b := map[string]any{"code": code, "name": name, "message": message}
	if fields != nil {
		b["fields"] = fields
	} else if code == 2 || code == 4 || code == 5 {
		b["fields"] = map[string]any{}
	}
	return &apiError{Status: status, Body: b}
}

func msgErr(status int, message string) *apiError {
	return &apiError{Status: status, Body: map[string]any{"message": message}}
}

var errNotFound = msgErr(http.StatusNotFound, "Not found")

// violationMessages flattens an error tree into Kong's "a.b: msg" list.
func violationMessages(t any, prefix string, out *[]string) {
	kongrules.WalkErrors(t, prefix, func(field string, entity bool, msg any) {
		if entity {
			*out = append(*out, fmt.Sprint(msg))
			return
		}
		*out = append(*out, field+": "+fmt.Sprint(msg))
	})
}

func schemaViolation(t errTree) *apiError {
	var msgs []string
	violationMessages(t, "", &msgs)
	msg := "schema violation (" + strings.Join(msgs, "; ") + ")"
	if len(msgs) > 1 {
		msg = fmt.Sprintf("%d schema violations (%s)", len(msgs), strings.Join(msgs, "; "))
	}
	return errBody(http.StatusBadRequest, 2, "schema violation", msg, t)
}

// normalize validates an entity of schema s as Kong configured as p would. With defaults,
// absent fields take their defaults (insert, upsert, declarative load).
func normalize(p profile, s *schema, in map[string]any, defaults bool) (map[string]any, errTree) {
	in, shortErr := expandShorthands(s, in)
	if shortErr != nil {
		return in, shortErr
	}
	if s.Name == "routes" && defaults && !p.expressions() {
		in = grpcRouteDefaults(in)
	}
	fs := s.fieldsFor(p)
	checks := append([]entityCheck(nil), s.Checks...)
	var nameErr string // the subschema named by "name" does not exist
	name, _ := in["name"].(string)
	switch s.Name {
	case "plugins":
		if kp := p.plugin(name); kp != nil {
			fs = pluginFields(p, name)
			checks = append(checks, kp.Checks...)
			if kp.NoConsumer {
				checks = append(checks, noConsumer)
			}
		} else if name != "" {
			nameErr = kongrules.NotEnabled(name)
		}
	case "vaults":
		if name != "" {
			var more []entityCheck
			fs, more, nameErr = vaultSubschema(p, s, name)
			checks = append(checks, more...)
		}
	}
	out, errs := validator(defaults).Record(fs, in)
	if nameErr != "" {
		errs = errTree{"name": nameErr}
	}
	if errs == nil {
		errs = kongrules.RunChecks(checks, out)
	}
	if errs == nil && s.Name == "targets" {
		if t, ok := out["target"].(string); ok {
			out["target"] = normalizeTarget(t)
		}
	}
	return out, errs
}

// grpcRouteDefaults: the grpc subschema of routes defaults strip_path to false.
func grpcRouteDefaults(in map[string]any) map[string]any {
	protos, _ := in["protocols"].([]any)
	if _, set := in["strip_path"]; set || len(protos) == 0 || (protos[0] != "grpc" && protos[0] != "grpcs") {
		return in
	}
	out := shallowCopy(in)
	out["strip_path"] = false
	return out
}

// noConsumer is typedefs.no_consumer: the authentication plugins cannot be scoped to a consumer.
func noConsumer(e map[string]any) ([]string, map[string]any) {
	if e["consumer"] != nil {
		return nil, errTree{"consumer": "value must be null"}
	}
	return nil, nil
}

func randomHex() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// hashPassword stores a basic-auth password as Kong does: sha1(password .. consumer id), on
// every write that carries a password (a hash read back and written again is hashed again).
func hashPassword(e map[string]any) {
	pw, _ := e["password"].(string)
	sum := sha1.Sum([]byte(pw + refID(e["consumer"])))
	e["password"] = hex.EncodeToString(sum[:])
}

// fillAuto sets the generated fields of a new or replaced entity.
func fillAuto(s *schema, e map[string]any, now int64, old map[string]any) {
	if e["id"] == nil {
		e["id"] = uuid.NewString()
	}
	if old != nil {
		e["created_at"] = old["created_at"]
	} else if e["created_at"] == nil {
		e["created_at"] = now
	}
	if s.Updated {
		e["updated_at"] = now
	}
	switch s.Name {
	case "keyauth_credentials", "jwt_secrets":
		if e["key"] == nil {
			e["key"] = randomHex()
		}
		if s.Name == "jwt_secrets" && e["secret"] == nil {
			e["secret"] = randomHex()
		}
	case "hmacauth_credentials":
		if e["secret"] == nil {
			e["secret"] = randomHex()
		}
	case "oauth2_credentials":
		if e["client_id"] == nil {
			e["client_id"] = randomHex()
		}
		if e["client_secret"] == nil {
			e["client_secret"] = randomHex()
		}
	case "plugins":
		// oauth2's provision_key is an auto field of its config.
		if cfg, ok := e["config"].(map[string]any); ok && e["name"] == "oauth2" && cfg["provision_key"] == nil {
			cfg["provision_key"] = randomHex()
		}
	case "ca_certificates":
		if c, ok := e["cert"].(string); ok {
			e["cert_digest"] = certDigest(c)
		}
	}
}

// resolveForeign turns {endpoint_key: v} references into {id} and checks
// that each referenced entity exists.
func (d *db) resolveForeign(s *schema, e map[string]any) *apiError {
	for _, f := range s.foreignFields(nil) {
		m, ok := e[f.Name].(map[string]any)
		if !ok {
			continue
		}
		ref := schemas[f.Ref]
		if id, ok := m["id"].(string); ok {
			if d.get(f.Ref, id) == nil {
				return errBody(http.StatusBadRequest, 4, "foreign key violation",
					fmt.Sprintf("the foreign key '%s' does not reference an existing '%s' entity.",
						luaTable([]string{"id"}, m), f.Ref),
					map[string]any{f.Name: fmt.Sprintf("the foreign key '%s' does not reference an existing '%s' entity.",
						luaTable([]string{"id"}, m), f.Ref)})
			}
			e[f.Name] = map[string]any{"id": id}
			continue
		}
		key, _ := m[ref.EndpointKey].(string)
		target := d.lookup(ref, key)
		if target == nil || isUUID(key) {
			msg := fmt.Sprintf("the foreign key '%s' does not reference an existing '%s' entity.",
				luaTable([]string{ref.EndpointKey}, m), f.Ref)
			return errBody(http.StatusBadRequest, 4, "foreign key violation", msg, map[string]any{f.Name: msg})
		}
		e[f.Name] = map[string]any{"id": target["id"]}
	}
	return nil
}

// checkUnique reports a UNIQUE violation against stored entities other than selfID.
func (d *db) checkUnique(s *schema, e map[string]any, selfID string) *apiError {
	x := d.idx[s.Name]
	for _, f := range s.Fields {
		if !f.Unique || e[f.Name] == nil {
			continue
		}
		if v, ok := e[f.Name].(string); ok {
			if x.values[f.Name][v].other(selfID) != "" {
				return uniqueErr([]string{f.Name}, e)
			}
			continue
		}
		// Not a string (not indexed): compare with every entity.
		for id, o := range d.ents[s.Name] {
			if id != selfID && o[f.Name] == e[f.Name] {
				return uniqueErr([]string{f.Name}, e)
			}
		}
	}
	if s.CacheKey != nil {
		if x.cache[cacheKeyOf(s, e)].other(selfID) != "" {
			keys := append([]string(nil), s.CacheKey...)
			sort.Strings(keys)
			return uniqueErr(keys, e)
		}
	}
	return nil
}

func uniqueErr(keys []string, e map[string]any) *apiError {
	present := keys[:0:0]
	for _, k := range keys {
		if _, ok := e[k]; ok { // a field this Kong has
			present = append(present, k)
		}
	}
	keys = present
	msg := fmt.Sprintf("UNIQUE violation detected on '%s'", luaTable(keys, e))
	return errBody(http.StatusConflict, 5, "unique constraint violation", msg, map[string]any{})
}

// referrers lists entities that reference (kind, id) through a foreign key,
// split into those that cascade and those that restrict the delete.
func (d *db) referrers(kind, id string) (cascade, restrict [][2]string) {
	for _, name := range entityOrder {
		s := schemas[name]
		for _, f := range s.foreignFields(nil) {
			if f.Ref != kind {
				continue
			}
			for _, rid := range d.referencing(s.Name, f.Name, id).list() {
				if f.OnDelete == "cascade" {
					cascade = append(cascade, [2]string{s.Name, rid})
				} else {
					restrict = append(restrict, [2]string{s.Name, rid})
				}
			}
		}
	}
	return cascade, restrict
}

// deleted is an entity removed by a delete, directly or by cascade.
type deleted struct {
	kind string
	ent  map[string]any
}

// delete removes an entity and cascades, returning what it removed (the
// entity last, after its dependents). It fails, changing nothing, when
// something restricts it.
func (d *db) delete(kind, id string) ([]deleted, *apiError) {
	if aerr := d.checkRestrict(kind, id); aerr != nil {
		return nil, aerr
	}
	var out []deleted
	d.deleteCascade(kind, id, &out)
	return out, nil
}

func (d *db) checkRestrict(kind, id string) *apiError {
	cascade, restrict := d.referrers(kind, id)
	if len(restrict) > 0 {
		msg := fmt.Sprintf("an existing '%s' entity references this '%s' entity", restrict[0][0], kind)
		return errBody(http.StatusBadRequest, 4, "foreign key violation", msg,
			map[string]any{"@referenced_by": restrict[0][0]})
	}
	for _, c := range cascade {
		if aerr := d.checkRestrict(c[0], c[1]); aerr != nil {
			return aerr
		}
	}
	return nil
}

func (d *db) deleteCascade(kind, id string, out *[]deleted) {
	cascade, _ := d.referrers(kind, id)
	for _, c := range cascade {
		d.deleteCascade(c[0], c[1], out)
	}
	if ent := d.ents[kind][id]; ent != nil {
		*out = append(*out, deleted{kind, ent})
		d.del(kind, id)
	}
}

// renderJSON is render's result as JSON. Kong's workers answer list pages from its database
// concurrently; the emulator answers under one mutex in the process of its client, so the
// encoding of every entity of every page (a dump of Kong is thousands of them) is CPU taken
// from the client. Each entity's bytes are kept until db.put or db.del changes it: the
// same bytes json.Marshal gives for render's result. Certificates, whose answer holds their
// SNIs (other entities), are encoded on every answer.
func (d *db) renderJSON(s *schema, e map[string]any) []byte {
	if s.Name == "certificates" {
		return marshalJSON(d.render(s, e))
	}
	id, _ := e["id"].(string)
	if b, ok := d.encoded[s.Name][id]; ok {
		return b
	}
	b := marshalJSON(e) // render is a copy of e: the same bytes
	if d.encoded[s.Name] == nil {
		d.encoded[s.Name] = map[string][]byte{}
	}
	d.encoded[s.Name][id] = b
	return b
}

// render returns the response form of an entity (certificates gain their snis).
func (d *db) render(s *schema, e map[string]any) map[string]any {
	out := kongrules.DeepCopy(e).(map[string]any)
	if s.Name == "certificates" {
		names := []any{}
		id, _ := e["id"].(string)
		for _, sid := range d.referencing("snis", "certificate", id).list() {
			names = append(names, d.ents["snis"][sid]["name"])
		}
		sort.Slice(names, func(i, j int) bool { return names[i].(string) < names[j].(string) })
		out["snis"] = names
	}
	return out
}

// entityName is the human name of an entity, for the audit log.
func entityName(s *schema, e map[string]any) string {
	for _, k := range []string{"name", "username", "target", "instance_name", "key", "group", "client_id"} {
		if v, ok := e[k].(string); ok && v != "" {
			if k == "key" && s.Name != "keyauth_credentials" && s.Name != "jwt_secrets" {
				continue
			}
			return v
		}
	}
	return ""
}

func entityTags(e map[string]any) []string {
	arr, _ := e["tags"].([]any)
	out := make([]string, 0, len(arr))
	for _, t := range arr {
		if s, ok := t.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// expandShorthands applies Kong's shorthand fields: services.url and the
// deprecated redis_* fields of rate-limiting. It works on a copy.
func expandShorthands(s *schema, in map[string]any) (map[string]any, errTree) {
	switch s.Name {
	case "services":
		raw, ok := in["url"]
		if !ok {
			return in, nil
		}
		out := shallowCopy(in)
		delete(out, "url")
		if raw == nil {
			return out, nil
		}
		str, isStr := raw.(string)
		if !isStr {
			return out, errTree{"url": "expected a string"}
		}
		u, err := url.Parse(str)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return out, errTree{"url": "missing host in url"}
		}
		out["protocol"] = u.Scheme
		out["host"] = u.Hostname()
		if p := u.Port(); p != "" {
			n, err := strconv.Atoi(p)
			if err != nil {
				return out, errTree{"url": "invalid port number"}
			}
			out["port"] = int64(n)
		} else if u.Scheme == "https" || u.Scheme == "grpcs" || u.Scheme == "wss" || u.Scheme == "tls" {
			out["port"] = int64(443)
		} else {
			out["port"] = int64(80)
		}
		if u.EscapedPath() != "" {
			out["path"] = u.EscapedPath()
		} else {
			out["path"] = nil
		}
		return out, nil
	case "plugins":
		name, _ := in["name"].(string)
		p := kongrules.Plugin(name)
		cfg, ok := in["config"].(map[string]any)
		if p == nil || !ok {
			return in, nil
		}
		out := shallowCopy(in)
		out["config"] = p.ExpandShorthands(cfg)
		return out, nil
	}
	return in, nil
}

func shallowCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
