package kongemu

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	svcID   = "00000000-0000-4000-8000-000000000001"
	routeID = "00000000-0000-4000-8000-000000000002"
	missing = "00000000-0000-4000-8000-0000000000ff"
)

// step is one request of a CRUD scenario and what Kong answers.
type step struct {
	method, path string
	body         any
	status       int
	want         string                               // exact JSON body, when set
	check        func(t *testing.T, b map[string]any) // extra checks
}

func runSteps(t *testing.T, e *Emulator, steps []step) {
	t.Helper()
	for i, s := range steps {
		st, b, _ := call(t, e, s.method, s.path, s.body)
		require.Equal(t, s.status, st, "step %d: %s %s: %v", i, s.method, s.path, b)
		if s.want != "" {
			require.Equal(t, jsonOf(t, s.want), b, "step %d: %s %s", i, s.method, s.path)
		}
		if s.check != nil {
			s.check(t, obj(b))
		}
	}
}

func TestCRUDServicesAndRoutes(t *testing.T) {
	e := New(Options{Mode: Postgres})
	runSteps(t, e, []step{
		{"POST", "/services", map[string]any{"id": svcID, "name": "s1", "host": "example.com", "tags": []any{"a", "b"}}, 201, "",
			func(t *testing.T, b map[string]any) {
				for _, f := range []string{"path", "client_certificate", "tls_verify", "tls_verify_depth", "ca_certificates"} {
					require.Contains(t, b, f)
					require.Nil(t, b[f], f)
				}
				require.Equal(t, svcID, b["id"])
				require.Equal(t, float64(80), b["port"])
				require.Equal(t, float64(60000), b["read_timeout"])
			}},
		{"GET", "/services/s1", nil, 200, "", func(t *testing.T, b map[string]any) { require.Equal(t, svcID, b["id"]) }},
		{"GET", "/services/" + svcID, nil, 200, "", nil},
		{"GET", "/services/nope", nil, 404, `{"message":"Not found"}`, nil},
		{"POST", "/services", map[string]any{"name": "s1", "host": "x"}, 409,
			`{"code":5,"name":"unique constraint violation","message":"UNIQUE violation detected on '{name=\"s1\"}'","fields":{}}`, nil},
		{"POST", "/services", map[string]any{"name": "s9"}, 400,
			`{"code":2,"name":"schema violation","message":"schema violation (host: required field missing)","fields":{"host":"required field missing"}}`, nil},
		{"POST", "/services", map[string]any{"host": "h", "port": "x", "foo": 1}, 400,
			`{"code":2,"name":"schema violation","message":"2 schema violations (foo: unknown field; port: expected an integer)","fields":{"foo":"unknown field","port":"expected an integer"}}`, nil},
		{"POST", "/services", map[string]any{"name": "bad name", "host": "h"}, 400, "", func(t *testing.T, b map[string]any) {
			require.Equal(t, "invalid value 'bad name': the only accepted ascii characters are alphanumerics or ., -, _, and ~", obj(b["fields"])["name"])
		}},
		{"POST", "/services", `{"host":`, 400, `{"message":"Cannot parse JSON body"}`, nil},
		{"PATCH", "/services/s1", map[string]any{"port": 8080}, 200, "", func(t *testing.T, b map[string]any) {
			require.Equal(t, float64(8080), b["port"])
			require.Equal(t, "example.com", b["host"])
			require.Equal(t, []any{"a", "b"}, b["tags"])
		}},
		{"PATCH", "/services/" + missing, map[string]any{"port": 1}, 404,
			`{"code":6,"name":"not found","message":"could not find the entity with primary key '{id=\"` + missing + `\"}'"}`, nil},
		{"PUT", "/services/s1", map[string]any{"host": "other.example.com"}, 200, "", func(t *testing.T, b map[string]any) {
			require.Equal(t, svcID, b["id"], "PUT by endpoint key keeps the id")
			require.Equal(t, float64(80), b["port"], "full replace: missing fields take defaults")
			require.Nil(t, b["tags"])
			require.Equal(t, "s1", b["name"])
		}},
		{"PUT", "/services/s2", map[string]any{"host": "h2"}, 200, "", func(t *testing.T, b map[string]any) {
			require.Equal(t, "s2", b["name"], "PUT by a new name creates")
		}},
		{"POST", "/services/s1/routes", map[string]any{"id": routeID, "name": "r1", "paths": []any{"/a"}}, 201, "",
			func(t *testing.T, b map[string]any) {
				require.Equal(t, map[string]any{"id": svcID}, b["service"])
				require.Equal(t, []any{"http", "https"}, b["protocols"])
			}},
		{"POST", "/routes", map[string]any{"name": "r2", "paths": []any{"/b"}, "service": map[string]any{"name": "s2"}}, 201, "", nil},
		{"POST", "/routes", map[string]any{"paths": []any{"/c"}, "service": map[string]any{"id": missing}}, 400,
			`{"code":4,"name":"foreign key violation","message":"the foreign key '{id=\"` + missing + `\"}' does not reference an existing 'services' entity.",
			  "fields":{"service":"the foreign key '{id=\"` + missing + `\"}' does not reference an existing 'services' entity."}}`, nil},
		{"POST", "/routes", map[string]any{"name": "r3"}, 400, "", func(t *testing.T, b map[string]any) {
			require.Equal(t, "schema violation (must set one of 'methods', 'hosts', 'headers', 'paths', 'snis' when 'protocols' is 'https')", b["message"])
			require.Equal(t, []any{"must set one of 'methods', 'hosts', 'headers', 'paths', 'snis' when 'protocols' is 'https'"}, obj(b["fields"])["@entity"])
		}},
		{"GET", "/services/s1/routes", nil, 200, "", func(t *testing.T, b map[string]any) {
			require.Len(t, b["data"], 1)
			require.Nil(t, b["next"])
			require.NotContains(t, b, "offset")
		}},
		{"GET", "/services/s1/routes/r1", nil, 200, "", nil},
		{"GET", "/services/s2/routes/r1", nil, 404, `{"message":"Not found"}`, nil},
		{"GET", "/services/nope/routes", nil, 404, `{"message":"Not found"}`, nil},
		{"DELETE", "/services/s1", nil, 400,
			`{"code":4,"name":"foreign key violation","message":"an existing 'routes' entity references this 'services' entity","fields":{"@referenced_by":"routes"}}`, nil},
		{"POST", "/routes/r1/plugins", map[string]any{"name": "cors"}, 201, "", func(t *testing.T, b map[string]any) {
			require.Equal(t, map[string]any{"id": routeID}, b["route"])
		}},
		{"POST", "/routes/r1/plugins", map[string]any{"name": "cors"}, 409, "", func(t *testing.T, b map[string]any) {
			require.Equal(t, fmt.Sprintf(`UNIQUE violation detected on '{consumer=null,name="cors",route={id="%s"},service=null}'`, routeID), b["message"])
		}},
		{"DELETE", "/routes/r1", nil, 204, "", nil},
		{"DELETE", "/routes/r1", nil, 204, "", nil},
		{"GET", "/plugins", nil, 200, `{"data":[],"next":null}`, nil},
		{"DELETE", "/services/s1", nil, 204, "", nil},
		{"PUT", "/routes", map[string]any{}, 405, `{"message":"Method not allowed"}`, nil},
	})
	kinds := []string{}
	for _, a := range e.Audit() {
		kinds = append(kinds, a.Method+" "+a.Entity+" "+a.Name)
	}
	require.Equal(t, []string{
		"POST services s1", "PATCH services s1", "PUT services s1", "PUT services s2",
		"POST routes r1", "POST routes r2", "POST plugins cors",
		"DELETE routes r1", "DELETE plugins cors", "DELETE services s1",
	}, kinds)
}

func TestCRUDPaginationAndTags(t *testing.T) {
	e := New(Options{Mode: Postgres})
	for i := 0; i < 7; i++ {
		tags := []any{"all"}
		if i%2 == 0 {
			tags = append(tags, "even")
		}
		if i == 3 {
			tags = append(tags, "three")
		}
		st, _, _ := call(t, e, "POST", "/services", map[string]any{"name": fmt.Sprintf("s%d", i), "host": "h", "tags": tags})
		require.Equal(t, 201, st)
	}
	// Page through with size=3: 3 + 3 + 1, no empty trailing page.
	var names []string
	path := "/services?size=3"
	pages := 0
	for path != "" {
		st, b, _ := call(t, e, "GET", path, nil)
		require.Equal(t, 200, st)
		pages++
		for _, d := range obj(b)["data"].([]any) {
			names = append(names, obj(d)["name"].(string))
		}
		off, ok := obj(b)["offset"].(string)
		if !ok {
			require.Nil(t, obj(b)["next"])
			break
		}
		require.Equal(t, "/services?offset="+off+"&size=3", obj(b)["next"])
		path = "/services?size=3&offset=" + off
	}
	require.Equal(t, 3, pages)
	require.Len(t, names, 7)

	count := func(q string) int {
		st, b, _ := call(t, e, "GET", "/services"+q, nil)
		require.Equal(t, 200, st, q)
		return len(obj(b)["data"].([]any))
	}
	require.Equal(t, 4, count("?tags=even"))
	require.Equal(t, 0, count("?tags=even,three"))
	require.Equal(t, 5, count("?tags=even/three"))
	require.Equal(t, 7, count("?tags=all&size=1000"))

	runSteps(t, e, []step{
		{"GET", "/services?tags=a,b/c", nil, 400,
			`{"code":11,"name":"invalid options","message":"invalid option (tags: invalid filter syntax)","options":{"tags":"invalid filter syntax"}}`, nil},
		{"GET", "/services?size=0", nil, 400, `{"code":9,"name":"invalid size","message":"size must be an integer between 1 and 1000"}`, nil},
		{"GET", "/services?size=1001", nil, 400, "", nil},
		{"GET", "/services?size=x", nil, 400, "", nil},
		{"GET", "/services?offset=!!!", nil, 400, "", func(t *testing.T, b map[string]any) {
			require.Equal(t, float64(7), b["code"])
			require.Equal(t, "invalid offset", b["name"])
		}},
		{"GET", "/tags", nil, 200, "", func(t *testing.T, b map[string]any) {
			require.Len(t, b["data"], 7+4+1)
			row := obj(b["data"].([]any)[0])
			require.Equal(t, "services", row["entity_name"])
			require.Contains(t, row, "entity_id")
			require.Contains(t, row, "tag")
		}},
		{"GET", "/tags/three", nil, 200, "", func(t *testing.T, b map[string]any) {
			require.Len(t, b["data"], 1)
		}},
	})
}

func TestCRUDEndpointKeysAndCascades(t *testing.T) {
	e := New(Options{Mode: Postgres})
	cert, key := testCert(t, "a.example.com", false, false)
	runSteps(t, e, []step{
		{"POST", "/consumers", map[string]any{"username": "alice"}, 201, "", nil},
		{"POST", "/consumers", map[string]any{"tags": []any{"x"}}, 400, "", func(t *testing.T, b map[string]any) {
			require.Equal(t, "schema violation (at least one of these fields must be non-empty: 'custom_id', 'username')", b["message"])
		}},
		{"POST", "/consumers/alice/key-auth", map[string]any{"key": "k1"}, 201, "", nil},
		{"POST", "/consumers/alice/basic-auth", map[string]any{"username": "u", "password": "p"}, 201, "", nil},
		{"POST", "/consumers/alice/hmac-auth", map[string]any{"username": "hu"}, 201, "", nil},
		{"POST", "/consumers/alice/jwt", map[string]any{"key": "iss"}, 201, "", nil},
		{"POST", "/consumers/alice/oauth2", map[string]any{"name": "app", "client_id": "cid"}, 201, "", nil},
		{"POST", "/consumers/alice/acls", map[string]any{"group": "g"}, 201, "", nil},
		{"POST", "/consumers/alice/plugins", map[string]any{"name": "request-termination"}, 201, "", nil},
		{"GET", "/key-auths/k1", nil, 200, "", nil},
		{"GET", "/consumers/alice/key-auth/k1", nil, 200, "", nil},
		{"GET", "/basic-auths/u", nil, 200, "", nil},
		{"GET", "/hmac-auths/hu", nil, 200, "", nil},
		{"GET", "/jwts/iss", nil, 200, "", nil},
		{"GET", "/oauth2/cid", nil, 200, "", nil},
		{"GET", "/acls/g", nil, 400, "", func(t *testing.T, b map[string]any) {
			require.Equal(t, float64(1), b["code"])
			require.Equal(t, "invalid primary key", b["name"])
		}},
		{"GET", "/ca_certificates/foo", nil, 400, "", nil},
		{"GET", "/acls", nil, 200, "", func(t *testing.T, b map[string]any) { require.Len(t, b["data"], 1) }},
		{"GET", "/consumers/alice/acls", nil, 200, "", func(t *testing.T, b map[string]any) { require.Len(t, b["data"], 1) }},
		{"DELETE", "/consumers/alice", nil, 204, "", nil},
		{"GET", "/key-auths", nil, 200, `{"data":[],"next":null}`, nil},
		{"GET", "/plugins", nil, 200, `{"data":[],"next":null}`, nil},

		{"POST", "/upstreams", map[string]any{"name": "up"}, 201, "", nil},
		{"POST", "/upstreams", map[string]any{"name": "10.0.0.1"}, 400, "", nil},
		{"POST", "/upstreams/up/targets", map[string]any{"target": "10.0.0.1"}, 201, "", func(t *testing.T, b map[string]any) {
			require.Equal(t, "10.0.0.1:8000", b["target"])
		}},
		{"GET", "/upstreams/up/targets/10.0.0.1:8000", nil, 200, "", nil},
		{"PUT", "/upstreams/up/targets/" + missing, map[string]any{"target": "10.0.0.9"}, 404, "", nil},
		{"GET", "/targets", nil, 404, "", nil},
		{"DELETE", "/upstreams/up", nil, 204, "", nil},
		{"GET", "/upstreams/up/targets", nil, 404, "", nil},

		{"POST", "/certificates", map[string]any{"cert": cert, "key": key, "snis": []any{"a.example.com", "b.example.com"}}, 201, "",
			func(t *testing.T, b map[string]any) {
				require.Equal(t, []any{"a.example.com", "b.example.com"}, b["snis"])
			}},
		{"GET", "/certificates/a.example.com/snis", nil, 200, "", func(t *testing.T, b map[string]any) { require.Len(t, b["data"], 2) }},
		{"POST", "/certificates", map[string]any{"cert": cert, "key": key, "snis": []any{"a.example.com"}}, 400, "", func(t *testing.T, b map[string]any) {
			require.True(t, strings.HasPrefix(b["message"].(string), "schema violation (snis: a.example.com already associated with existing certificate"))
		}},
		{"PATCH", "/certificates/a.example.com", map[string]any{"tags": []any{"t"}}, 200, "", func(t *testing.T, b map[string]any) {
			require.Equal(t, []any{}, b["snis"], "PATCH without snis removes them (transient field)")
		}},
		{"GET", "/snis", nil, 200, `{"data":[],"next":null}`, nil},
	})
}

func TestSchemasEndpoints(t *testing.T) {
	e := New(Options{Mode: Postgres})
	runSteps(t, e, []step{
		{"GET", "/schemas/services", nil, 200, "", func(t *testing.T, b map[string]any) {
			found := map[string]any{}
			for _, f := range b["fields"].([]any) {
				for k, v := range obj(f) {
					found[k] = v
				}
			}
			require.Equal(t, float64(80), obj(found["port"])["default"])
			require.Equal(t, "http", obj(found["protocol"])["default"])
			require.Equal(t, "foreign", obj(found["client_certificate"])["type"])
		}},
		{"GET", "/schemas/nope", nil, 404, `{"message":"No entity named 'nope'"}`, nil},
		{"GET", "/schemas/plugins/rate-limiting", nil, 200, "", func(t *testing.T, b map[string]any) {
			var cfg map[string]any
			for _, f := range b["fields"].([]any) {
				if c, ok := obj(f)["config"]; ok {
					cfg = obj(c)
				}
			}
			require.Equal(t, "record", cfg["type"])
			require.NotEmpty(t, cfg["fields"])
		}},
		{"GET", "/schemas/plugins/nope", nil, 404, `{"message":"No plugin named 'nope'"}`, nil},
		{"POST", "/schemas/services/validate", map[string]any{"host": "h"}, 200, `{"message":"schema validation successful"}`, nil},
		{"POST", "/schemas/services/validate", map[string]any{"host": "h:1"}, 400, "", func(t *testing.T, b map[string]any) {
			require.Equal(t, "schema violation (host: must not have a port)", b["message"])
		}},
		{"POST", "/schemas/routes/validate", map[string]any{"paths": []any{"/"}, "service": map[string]any{"id": missing}}, 200, "", nil},
		{"POST", "/schemas/plugins/validate", map[string]any{"name": "rate-limiting", "config": map[string]any{"second": 1}}, 200, "", nil},
		{"POST", "/schemas/plugins/validate", map[string]any{"name": "rate-limiting", "config": map[string]any{"second": 5, "minute": 1}}, 400, "", func(t *testing.T, b map[string]any) {
			require.Contains(t, b["message"], "cannot be lower than the limit for second")
		}},
	})
}

func TestCRUDFormBodies(t *testing.T) {
	e := New(Options{Mode: Postgres})
	form := func(method, path, body string) (int, map[string]any) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		return rec.Code, obj(jsonOf(t, rec.Body.String()))
	}
	st, b := form("POST", "/services", "name=s&host=example.com&port=8080&tags[]=a&tags[]=b")
	require.Equal(t, 201, st, b)
	require.Equal(t, float64(8080), b["port"])
	require.Equal(t, []any{"a", "b"}, b["tags"])
	st, b = form("POST", "/routes", "name=r&paths=/a&service.name=s&strip_path=false")
	require.Equal(t, 201, st, b)
	require.Equal(t, false, b["strip_path"])
	require.Equal(t, []any{"/a"}, b["paths"])
	st, b = form("POST", "/services/s/plugins", "name=rate-limiting&config.minute=5")
	require.Equal(t, 201, st, b)
	require.Equal(t, float64(5), obj(b["config"])["minute"])
	st, _ = form("POST", "/services", "name=t&host=h&port=x")
	require.Equal(t, 400, st)
}

// TestListPagesFollowWrites: list pages are assembled from each entity's JSON, kept between
// answers (db.renderJSON); they must be the bytes json.Marshal gives for the page as a map,
// and show every write at once (an update, a delete, an upsert by PUT).
func TestListPagesFollowWrites(t *testing.T) {
	e := New(Options{Mode: Postgres})
	for i := 0; i < 3; i++ {
		st, _, _ := call(t, e, "POST", "/services", map[string]any{"name": fmt.Sprintf("s%d", i), "host": "h", "tags": []any{"a&b<c>", "x"}})
		require.Equal(t, 201, st)
	}
	page := func(path string) (raw string, decoded map[string]any) {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		require.Equal(t, 200, rec.Code, path)
		return rec.Body.String(), obj(jsonOf(t, rec.Body.String()))
	}
	marshal := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return string(b)
	}
	for _, path := range []string{"/services?size=2&tags=a%26b%3Cc%3E", "/services", "/services?size=1000&tags=x"} {
		raw, decoded := page(path)
		require.Equal(t, marshal(decoded), raw, path) // json.Marshal's bytes (keys in order, HTML escaped)
		raw2, _ := page(path)
		require.Equal(t, raw, raw2, "the same page twice: %s", path)
	}
	hosts := func() []string {
		_, b := page("/services")
		var out []string
		for _, d := range b["data"].([]any) {
			out = append(out, obj(d)["name"].(string)+"="+obj(d)["host"].(string))
		}
		return out
	}
	require.ElementsMatch(t, []string{"s0=h", "s1=h", "s2=h"}, hosts())
	st, _, _ := call(t, e, "PATCH", "/services/s1", map[string]any{"host": "patched"})
	require.Equal(t, 200, st)
	st, _, _ = call(t, e, "PUT", "/services/s2", map[string]any{"host": "put"})
	require.Equal(t, 200, st)
	st, _, _ = call(t, e, "DELETE", "/services/s0", nil)
	require.Equal(t, 204, st)
	require.ElementsMatch(t, []string{"s1=patched", "s2=put"}, hosts())
}
