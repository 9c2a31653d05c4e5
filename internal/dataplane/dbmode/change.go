package dbmode

import (
	"bytes"
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/kong/go-database-reconciler/pkg/diff"
	"github.com/kong/go-kong/kong"
)

// Op is what a change does to an entity.
type Op string

// The three operations of a sync.
const (
	Create Op = "create"
	Update Op = "update"
	Delete Op = "delete"
)

// Change is one entity a sync creates, updates or deletes.
type Change struct {
	Op Op
	// Kind is go-database-reconciler's entity kind: "service", "route", "plugin", ...
	Kind string
	// Name is go-database-reconciler's name of the entity ("default.echo.80", "cors for
	// route default.echo.00", "10.0.0.1:80 for upstream echo.default.80.svc", ...).
	Name string
	// Tags of the entity: its target tags for a create or update, its current tags for a
	// delete. They name the Kubernetes object (kongstate.ObjectRefFromTags).
	Tags []string
	// ID is the entity's ID; Upstream, for a target (which carries no tags), its upstream's.
	ID, Upstream string
	// Fields lists, for an update, the top-level fields that differ.
	Fields []FieldChange
	// Err is the request's failure, when it failed.
	Err error
}

// FieldChange is one field of an update, its values in JSON ("" when absent).
type FieldChange struct {
	Field    string
	Old, New string
}

// ignoredFields are set by Kong, never by the controller, and always differ.
var ignoredFields = map[string]bool{"created_at": true, "updated_at": true}

func changeOf(a diff.EntityAction) Change {
	c := Change{Op: Op(a.Action), Kind: a.Entity.Kind, Name: a.Entity.Name, Err: a.Error}
	// For a delete too, the syncer's event carries the entity as its object (New).
	subject := a.Entity.New
	if subject == nil {
		subject = a.Entity.Old
	}
	c.Tags, c.ID, c.Upstream = identityOf(subject)
	if c.Op == Update {
		c.Fields = fieldChanges(a.Entity.Old, a.Entity.New)
	}
	return c
}

// identityOf reads the tags, the ID and, for a target, the upstream's ID of any
// go-database-reconciler state entity: they all marshal a "tags" array and an "id", a target
// its "upstream" as {id}.
func identityOf(obj any) (tags []string, id, upstream string) {
	if obj == nil {
		return nil, "", ""
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, "", ""
	}
	var v struct {
		Tags     []string `json:"tags"`
		ID       string   `json:"id"`
		Upstream *struct {
			ID string `json:"id"`
		} `json:"upstream"`
	}
	_ = json.Unmarshal(b, &v)
	if v.Upstream != nil {
		upstream = v.Upstream.ID
	}
	return v.Tags, v.ID, upstream
}

func fieldChanges(oldObj, newObj any) []FieldChange {
	om, nm := jsonMap(oldObj), jsonMap(newObj)
	keys := map[string]bool{}
	for k := range om {
		keys[k] = true
	}
	for k := range nm {
		keys[k] = true
	}
	var out []FieldChange
	for k := range keys {
		if ignoredFields[k] {
			continue
		}
		o, n := om[k], nm[k]
		if bytes.Equal(o, n) || (isNullish(o) && isNullish(n)) {
			continue
		}
		out = append(out, FieldChange{Field: k, Old: string(o), New: string(n)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

// jsonMap renders obj's top-level fields as canonical JSON (map keys sorted), so that equal
// values compare equal byte for byte.
func jsonMap(obj any) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	if obj == nil {
		return out
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return out
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return out
	}
	for k, v := range m {
		// A foreign key is {id} in the target and {id, name} in the dump: only the id counts.
		if ref, ok := v.(map[string]any); ok && ref["id"] != nil {
			v = map[string]any{"id": ref["id"]}
		}
		out[k], _ = json.Marshal(v)
	}
	return out
}

func isNullish(b json.RawMessage) bool {
	s := string(b)
	return s == "" || s == "null" || s == "[]" || s == "{}"
}

type fieldError struct{ field, message string }

// fieldErrors reads Kong's error: go-kong keeps only the message of an entity request, which
// for schema violations is "schema violation (f: msg)" or "N schema violations (f1: m1; f2:
// m2)" (kong/db/errors.lua). One entry per field, or the whole message when it has none.
func fieldErrors(e *kong.APIError) []fieldError {
	msg := e.Error()
	if m := schemaViolation.FindStringSubmatch(apiMessage(e)); m != nil {
		var out []fieldError
		for _, part := range strings.Split(m[1], "; ") {
			field, text, ok := strings.Cut(part, ": ")
			if !ok || strings.ContainsAny(field, " '") {
				field, text = "", part
			}
			out = append(out, fieldError{field: strings.TrimPrefix(field, "@entity"), message: text})
		}
		return out
	}
	if m := apiMessage(e); m != "" {
		msg = m
	}
	return []fieldError{{message: msg}}
}

var schemaViolation = regexp.MustCompile(`^(?:\d+ )?schema violations? \((.*)\)$`)

// apiMessage is Kong's "message", which go-kong's APIError keeps only inside Error().
func apiMessage(e *kong.APIError) string {
	s := e.Error()
	i := strings.Index(s, "(message: ")
	if i < 0 || !strings.HasSuffix(s, ")") {
		return ""
	}
	q, err := strconv.Unquote(s[i+len("(message: ") : len(s)-1])
	if err != nil {
		return ""
	}
	return q
}
