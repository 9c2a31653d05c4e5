package kongemu

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// uid makes a UUID whose order follows n.
func uid(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

// requireIndexesFresh checks that the incrementally kept indexes equal
// indexes built from scratch over the stored entities.
func requireIndexesFresh(t *testing.T, d *db) {
	t.Helper()
	fresh := newDB()
	for kind, m := range d.ents {
		for _, ent := range m {
			fresh.put(kind, ent)
		}
	}
	flat := func(m multiIndex) map[string][]string {
		out := map[string][]string{}
		for k, s := range m {
			require.NotEmpty(t, s.ids, "empty set left under %q", k)
			out[k] = append([]string(nil), s.list()...)
		}
		return out
	}
	for kind, x := range d.idx {
		f := fresh.idx[kind]
		want := sortedKeys(d.ents[kind])
		require.Equal(t, len(want), len(x.all.list()), kind)
		if len(want) > 0 {
			require.Equal(t, want, x.all.list(), kind)
		}
		for name := range f.values {
			require.Equal(t, flat(f.values[name]), flat(x.values[name]), "%s.%s", kind, name)
		}
		for name := range f.refs {
			require.Equal(t, flat(f.refs[name]), flat(x.refs[name]), "%s.%s", kind, name)
		}
		require.Equal(t, flat(f.cache), flat(x.cache), kind)
		require.Equal(t, flat(f.tags), flat(x.tags), kind)
	}
}

// listAll pages through path (which has no query or only tags) with size and returns the ids.
func listAll(t *testing.T, e *Emulator, path string, size int) []string {
	t.Helper()
	var ids []string
	sep := "?"
	if len(path) > 0 && containsByte(path, '?') {
		sep = "&"
	}
	next := fmt.Sprintf("%s%ssize=%d", path, sep, size)
	for {
		st, b, _ := call(t, e, "GET", next, nil)
		require.Equal(t, 200, st, "%s: %v", next, b)
		data := obj(b)["data"].([]any)
		for _, d := range data {
			ids = append(ids, obj(d)["id"].(string))
		}
		off, ok := obj(b)["offset"].(string)
		if !ok {
			require.Nil(t, obj(b)["next"])
			return ids
		}
		require.NotEmpty(t, data, "no empty page before the last")
		next = fmt.Sprintf("%s%ssize=%d&offset=%s", path, sep, size, off)
	}
}

func containsByte(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return true
		}
	}
	return false
}

// TestIndexesFollowRandomWrites drives random creates, renames, retags,
// moves and deletes (with cascades) and checks after each request that the
// indexes match the entities and that lists match a brute-force filter.
func TestIndexesFollowRandomWrites(t *testing.T) {
	e := New(Options{Mode: Postgres})
	rng := rand.New(rand.NewPCG(7, 11))
	const n = 12
	tagsOf := func() []any {
		var out []any
		for _, tg := range []string{"a", "b", "c"} {
			if rng.IntN(2) == 0 {
				out = append(out, tg)
			}
		}
		return out
	}
	for step := 0; step < 600; step++ {
		i, j := rng.IntN(n), rng.IntN(n)
		switch rng.IntN(9) {
		case 0, 1:
			call(t, e, "PUT", "/services/"+uid(i), map[string]any{"name": fmt.Sprintf("s%d", rng.IntN(n)), "host": "h", "tags": tagsOf()})
		case 2:
			call(t, e, "PUT", "/routes/"+uid(100+i), map[string]any{"name": fmt.Sprintf("r%d", rng.IntN(n)), "paths": []any{"/"},
				"service": map[string]any{"id": uid(j)}, "tags": tagsOf()})
		case 3:
			body := map[string]any{"name": "correlation-id", "tags": tagsOf()}
			if rng.IntN(2) == 0 {
				body["route"] = map[string]any{"id": uid(100 + j)}
			} else {
				body["service"] = map[string]any{"id": uid(j)}
			}
			call(t, e, "PUT", "/plugins/"+uid(200+i), body)
		case 4:
			call(t, e, "PUT", "/upstreams/"+uid(300+i), map[string]any{"name": fmt.Sprintf("u%d", rng.IntN(n)), "tags": tagsOf()})
		case 5:
			target := fmt.Sprintf("10.0.0.%d:80", rng.IntN(4))
			if rng.IntN(2) == 0 {
				call(t, e, "POST", "/upstreams/"+uid(300+j)+"/targets", map[string]any{"target": target, "tags": tagsOf()})
			} else if e.Entity("upstreams", uid(300+j)) == nil {
				continue
			} else if ids := listAll(t, e, "/upstreams/"+uid(300+j)+"/targets", 5); len(ids) > 0 {
				call(t, e, "PUT", "/upstreams/"+uid(300+j)+"/targets/"+ids[rng.IntN(len(ids))], map[string]any{"target": target})
			}
		case 6:
			kind := []string{"services", "routes", "plugins", "upstreams"}[rng.IntN(4)]
			off := map[string]int{"services": 0, "routes": 100, "plugins": 200, "upstreams": 300}[kind]
			call(t, e, "DELETE", "/"+kind+"/"+uid(off+i), nil)
		case 7:
			call(t, e, "DELETE", fmt.Sprintf("/services/s%d", i), nil)
		case 8:
			call(t, e, "PATCH", "/routes/"+uid(100+i), map[string]any{"name": fmt.Sprintf("r%d", rng.IntN(n)), "tags": tagsOf()})
		}
		e.mu.Lock()
		requireIndexesFresh(t, e.db)
		e.mu.Unlock()

		if step%20 != 0 {
			continue
		}
		for _, kind := range []string{"services", "routes", "plugins", "upstreams"} {
			for _, q := range []string{"", "?tags=a", "?tags=a,b", "?tags=a/c", "?tags=b,c,a"} {
				tags, or, _ := parseTagsString(q)
				var want []string
				for _, ent := range e.Entities(kind) {
					if tags == nil || matchTags(ent, tags, or) {
						want = append(want, ent["id"].(string))
					}
				}
				require.Equal(t, want, listAll(t, e, "/"+kind+q, 1+rng.IntN(4)), "%s%s", kind, q)
			}
		}
		for k := 0; k < n; k++ {
			var want []string
			for _, ent := range e.Entities("routes") {
				if refID(ent["service"]) == uid(k) {
					want = append(want, ent["id"].(string))
				}
			}
			if e.Entity("services", uid(k)) != nil {
				require.Equal(t, want, listAll(t, e, "/services/"+uid(k)+"/routes", 2))
			}
			if name := fmt.Sprintf("s%d", k); e.Entity("services", name) != nil {
				require.Equal(t, name, e.Entity("services", name)["name"])
			}
		}
	}
}

func parseTagsString(q string) ([]string, bool, *apiError) {
	if q == "" {
		return nil, false, nil
	}
	vals := map[string][]string{"tags": {q[len("?tags="):]}}
	return parseTags(vals)
}

// TestPaginationAcrossInsertsAndDeletes: the offset is a position in the
// current list, so entities inserted or deleted before it shift the next page.
func TestPaginationAcrossInsertsAndDeletes(t *testing.T) {
	e := New(Options{Mode: Postgres})
	for i := 10; i < 20; i++ {
		st, _, _ := call(t, e, "PUT", "/services/"+uid(i), map[string]any{"host": "h", "tags": []any{"t"}})
		require.Equal(t, 200, st)
	}
	for _, q := range []string{"", "&tags=t"} {
		st, b, _ := call(t, e, "GET", "/services?size=4"+q, nil)
		require.Equal(t, 200, st)
		off := obj(b)["offset"].(string)
		ids := func(b any) []string {
			var out []string
			for _, d := range obj(b)["data"].([]any) {
				out = append(out, obj(d)["id"].(string))
			}
			return out
		}
		require.Equal(t, []string{uid(10), uid(11), uid(12), uid(13)}, ids(b))

		// One inserted before the offset, one deleted after it.
		call(t, e, "PUT", "/services/"+uid(5), map[string]any{"host": "h", "tags": []any{"t"}})
		call(t, e, "DELETE", "/services/"+uid(15), nil)
		st, b, _ = call(t, e, "GET", "/services?size=4&offset="+off+q, nil)
		require.Equal(t, 200, st)
		require.Equal(t, []string{uid(13), uid(14), uid(16), uid(17)}, ids(b), "position 4 of the new list")

		// Two deleted before the offset.
		call(t, e, "DELETE", "/services/"+uid(5), nil)
		call(t, e, "DELETE", "/services/"+uid(10), nil)
		st, b, _ = call(t, e, "GET", "/services?size=4&offset="+off+q, nil)
		require.Equal(t, 200, st)
		require.Equal(t, []string{uid(16), uid(17), uid(18), uid(19)}, ids(b))
		require.NotContains(t, obj(b), "offset", "last page")

		// Restore for the tagged pass.
		for _, i := range []int{10, 15} {
			call(t, e, "PUT", "/services/"+uid(i), map[string]any{"host": "h", "tags": []any{"t"}})
		}
	}
	// An offset past the end: empty last page.
	st, b, _ := call(t, e, "GET", "/services?offset=OTk", nil)
	require.Equal(t, 200, st)
	require.Equal(t, jsonOf(t, `{"data":[],"next":null}`), b)
}

// TestIndexedConstraints: unique names, endpoint keys, cache keys and
// reverse foreign keys follow renames, moves and deletes.
func TestIndexedConstraints(t *testing.T) {
	e := New(Options{Mode: Postgres})
	runSteps(t, e, []step{
		{"PUT", "/services/" + uid(1), map[string]any{"name": "a", "host": "h"}, 200, "", nil},
		{"PUT", "/services/" + uid(2), map[string]any{"name": "a", "host": "h"}, 409, "", nil},
		{"PUT", "/services/" + uid(1), map[string]any{"name": "b", "host": "h"}, 200, "", nil},
		{"GET", "/services/a", nil, 404, "", nil},
		{"GET", "/services/b", nil, 200, "", func(t *testing.T, b map[string]any) { require.Equal(t, uid(1), b["id"]) }},
		{"PUT", "/services/" + uid(2), map[string]any{"name": "a", "host": "h"}, 200, "", nil},
		{"PATCH", "/services/a", map[string]any{"name": "b"}, 409, "", nil},
		{"PUT", "/services/" + uid(1), map[string]any{"name": "b", "host": "h2"}, 200, "", nil},

		// Routes restrict the service delete, wherever they were moved.
		{"PUT", "/routes/" + uid(11), map[string]any{"paths": []any{"/"}, "service": map[string]any{"id": uid(1)}}, 200, "", nil},
		{"PUT", "/routes/" + uid(11), map[string]any{"paths": []any{"/"}, "service": map[string]any{"id": uid(2)}}, 200, "", nil},
		{"GET", "/services/b/routes", nil, 200, `{"data":[],"next":null}`, nil},
		{"GET", "/services/a/routes", nil, 200, "", func(t *testing.T, b map[string]any) { require.Len(t, b["data"], 1) }},
		{"DELETE", "/services/b", nil, 204, "", nil},
		{"DELETE", "/services/a", nil, 400,
			`{"code":4,"name":"foreign key violation","message":"an existing 'routes' entity references this 'services' entity","fields":{"@referenced_by":"routes"}}`, nil},

		// Plugins: (name, route, service, consumer) unique; cascade with the route.
		{"PUT", "/plugins/" + uid(21), map[string]any{"name": "correlation-id", "route": map[string]any{"id": uid(11)}}, 200, "", nil},
		{"PUT", "/plugins/" + uid(22), map[string]any{"name": "correlation-id", "route": map[string]any{"id": uid(11)}}, 409, "", func(t *testing.T, b map[string]any) {
			require.Contains(t, b["message"], "UNIQUE violation detected on '{consumer=null,name=\"correlation-id\",route={id=")
		}},
		{"PUT", "/plugins/" + uid(22), map[string]any{"name": "correlation-id", "service": map[string]any{"id": uid(2)}}, 200, "", nil},
		{"PUT", "/plugins/" + uid(20), map[string]any{"name": "cors", "route": map[string]any{"id": uid(11)}}, 200, "", nil},
		{"DELETE", "/routes/" + uid(11), nil, 204, "", nil},
		{"GET", "/plugins", nil, 200, "", func(t *testing.T, b map[string]any) {
			require.Len(t, b["data"], 1)
			require.Equal(t, uid(22), obj(b["data"].([]any)[0])["id"])
		}},
		{"PUT", "/routes/" + uid(11), map[string]any{"paths": []any{"/"}, "service": map[string]any{"id": uid(2)}}, 200, "", nil},
		{"PUT", "/plugins/" + uid(21), map[string]any{"name": "correlation-id", "route": map[string]any{"id": uid(11)}}, 200, "", nil},

		// Targets: (upstream, target) unique, found by target under their upstream.
		{"PUT", "/upstreams/" + uid(31), map[string]any{"name": "up1"}, 200, "", nil},
		{"PUT", "/upstreams/" + uid(32), map[string]any{"name": "up2"}, 200, "", nil},
		{"POST", "/upstreams/up1/targets", map[string]any{"id": uid(41), "target": "10.0.0.1"}, 201, "", nil},
		{"POST", "/upstreams/up1/targets", map[string]any{"id": uid(42), "target": "10.0.0.2"}, 201, "", nil},
		{"POST", "/upstreams/up2/targets", map[string]any{"id": uid(43), "target": "10.0.0.1"}, 201, "", nil},
		{"POST", "/upstreams/up1/targets", map[string]any{"target": "10.0.0.1:8000"}, 409, "", nil},
		{"PUT", "/upstreams/up1/targets/" + uid(42), map[string]any{"target": "10.0.0.1"}, 409, "", nil},
		{"GET", "/upstreams/up2/targets/10.0.0.1", nil, 200, "", func(t *testing.T, b map[string]any) { require.Equal(t, uid(43), b["id"]) }},
		{"GET", "/upstreams/up2/targets/10.0.0.2", nil, 404, "", nil},
		{"GET", "/upstreams/up1/targets", nil, 200, "", func(t *testing.T, b map[string]any) {
			require.Equal(t, uid(41), obj(b["data"].([]any)[0])["id"])
			require.Equal(t, uid(42), obj(b["data"].([]any)[1])["id"])
		}},
		{"DELETE", "/upstreams/up1/targets/10.0.0.1:8000", nil, 204, "", nil},
		{"PUT", "/upstreams/up1/targets/" + uid(42), map[string]any{"target": "10.0.0.1"}, 200, "", nil},
		{"DELETE", "/upstreams/up1", nil, 204, "", nil},
		{"GET", "/upstreams/up2/targets", nil, 200, "", func(t *testing.T, b map[string]any) { require.Len(t, b["data"], 1) }},
		{"PUT", "/upstreams/" + uid(33), map[string]any{"name": "up1"}, 200, "", nil},
		{"POST", "/upstreams/up1/targets", map[string]any{"id": uid(42), "target": "10.0.0.1"}, 201, "", nil},
	})
	e.mu.Lock()
	requireIndexesFresh(t, e.db)
	e.mu.Unlock()
}

// TestCascadeAuditOrder: a delete records the entity first, then what
// cascaded, dependents in schema order and by id.
func TestCascadeAuditOrder(t *testing.T) {
	e := New(Options{Mode: Postgres})
	runSteps(t, e, []step{
		{"PUT", "/services/" + uid(1), map[string]any{"host": "h"}, 200, "", nil},
		{"PUT", "/routes/" + uid(2), map[string]any{"paths": []any{"/"}, "service": map[string]any{"id": uid(1)}}, 200, "", nil},
		{"PUT", "/plugins/" + uid(9), map[string]any{"name": "cors", "route": map[string]any{"id": uid(2)}}, 200, "", nil},
		{"PUT", "/plugins/" + uid(7), map[string]any{"name": "correlation-id", "route": map[string]any{"id": uid(2)}}, 200, "", nil},
		{"PUT", "/plugins/" + uid(8), map[string]any{"name": "cors", "service": map[string]any{"id": uid(1)}}, 200, "", nil},
		{"PUT", "/consumers/" + uid(3), map[string]any{"username": "c"}, 200, "", nil},
		{"PUT", "/plugins/" + uid(6), map[string]any{"name": "correlation-id", "consumer": map[string]any{"id": uid(3)}}, 200, "", nil},
		{"POST", "/consumers/c/key-auth", map[string]any{"id": uid(5), "key": "k"}, 201, "", nil},
		{"POST", "/consumers/c/acls", map[string]any{"id": uid(4), "group": "g"}, 201, "", nil},
	})
	mark := e.AuditMark()
	runSteps(t, e, []step{
		{"DELETE", "/routes/" + uid(2), nil, 204, "", nil},
		{"DELETE", "/consumers/c", nil, 204, "", nil},
	})
	var got []string
	for _, a := range e.AuditSince(mark) {
		got = append(got, a.Method+" "+a.Path+" "+a.Entity+" "+a.ID)
	}
	require.Equal(t, []string{
		"DELETE /routes/" + uid(2) + " routes " + uid(2),
		"DELETE /routes/" + uid(2) + " plugins " + uid(7),
		"DELETE /routes/" + uid(2) + " plugins " + uid(9),
		"DELETE /consumers/c consumers " + uid(3),
		"DELETE /consumers/c plugins " + uid(6),
		"DELETE /consumers/c keyauth_credentials " + uid(5),
		"DELETE /consumers/c acls " + uid(4),
	}, got)
	require.Equal(t, map[string]int{"services": 1, "plugins": 1}, e.Counts())
	e.mu.Lock()
	requireIndexesFresh(t, e.db)
	e.mu.Unlock()
}

// TestCertificateSNIIndexes: SNI names find their certificate, move with
// replacements and free up on removal.
func TestCertificateSNIIndexes(t *testing.T) {
	e := New(Options{Mode: Postgres})
	cert, key := testCert(t, "a.example.com", false, false)
	runSteps(t, e, []step{
		{"PUT", "/certificates/" + uid(1), map[string]any{"cert": cert, "key": key, "snis": []any{"b.example.com", "a.example.com"}}, 200, "",
			func(t *testing.T, b map[string]any) {
				require.Equal(t, []any{"a.example.com", "b.example.com"}, b["snis"])
			}},
		{"PUT", "/certificates/" + uid(2), map[string]any{"cert": cert, "key": key, "snis": []any{"b.example.com"}}, 400, "", nil},
		{"PUT", "/certificates/" + uid(1), map[string]any{"cert": cert, "key": key, "snis": []any{"a.example.com", "c.example.com"}}, 200, "",
			func(t *testing.T, b map[string]any) {
				require.Equal(t, []any{"a.example.com", "c.example.com"}, b["snis"])
			}},
		{"GET", "/certificates/b.example.com", nil, 404, "", nil},
		{"GET", "/certificates/c.example.com", nil, 200, "", func(t *testing.T, b map[string]any) { require.Equal(t, uid(1), b["id"]) }},
		{"PUT", "/certificates/" + uid(2), map[string]any{"cert": cert, "key": key, "snis": []any{"b.example.com"}}, 200, "", nil},
		{"GET", "/certificates", nil, 200, "", func(t *testing.T, b map[string]any) {
			require.Len(t, b["data"], 2)
			require.Equal(t, []any{"b.example.com"}, obj(b["data"].([]any)[1])["snis"])
		}},
		{"DELETE", "/certificates/a.example.com", nil, 204, "", nil},
		{"GET", "/snis", nil, 200, "", func(t *testing.T, b map[string]any) {
			var names []string
			for _, d := range b["data"].([]any) {
				names = append(names, obj(d)["name"].(string))
			}
			sort.Strings(names)
			require.Equal(t, []string{"b.example.com"}, names)
		}},
		{"PUT", "/certificates/" + uid(3), map[string]any{"cert": cert, "key": key, "snis": []any{"a.example.com"}}, 200, "", nil},
	})
	e.mu.Lock()
	requireIndexesFresh(t, e.db)
	e.mu.Unlock()
}
