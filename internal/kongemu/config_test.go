package kongemu

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const okConfig = `{"_format_version":"3.0",
 "services":[{"name":"svc","host":"example.com","tags":["k8s-name:svc"],
   "routes":[{"name":"r1","paths":["/a","~/b/\\d+$"],"tags":["k8s-name:ing"],
     "plugins":[{"name":"cors"}]}]}],
 "upstreams":[{"name":"up.default.svc","targets":[{"target":"10.0.0.1"},{"target":"10.0.0.2:8080","weight":50}]}],
 "consumers":[{"username":"alice","keyauth_credentials":[{"key":"k1"}],"acls":[{"group":"g"}]}],
 "plugins":[{"name":"rate-limiting","service":"svc","config":{"minute":10}}]}`

func post(t *testing.T, h http.Handler, path, ct, body string) (int, map[string]any, string) {
	t.Helper()
	req := httptest.NewRequest("POST", path, strings.NewReader(body))
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	raw, _ := io.ReadAll(rec.Result().Body)
	var m map[string]any
	if len(raw) > 0 {
		v := jsonOf(t, string(raw))
		m = obj(v)
	}
	return rec.Code, m, string(raw)
}

func statusHash(t *testing.T, e *Emulator) string {
	_, b, _ := call(t, e, "GET", "/status", nil)
	return obj(b)["configuration_hash"].(string)
}

func TestPostConfigForms(t *testing.T) {
	yamlCfg := "_format_version: \"3.0\"\nservices:\n- name: s\n  host: example.com\n"
	md5hexStr := func(s string) string { sum := md5.Sum([]byte(s)); return hex.EncodeToString(sum[:]) }
	cases := []struct {
		name     string
		path, ct string
		body     string
		status   int
		wantBody string // exact JSON, when set
		wantHash string // when set
	}{
		{"json object", "/config", "application/json", okConfig, 201, "", ""},
		{"json object no content type", "/config", "", okConfig, 201, "", ""},
		{"config string yaml", "/config", "application/json", `{"config":` + jsonString(yamlCfg) + `}`, 201, "", md5hexStr(yamlCfg)},
		{"raw yaml", "/config", "application/yaml", yamlCfg, 201, "", md5hexStr(yamlCfg)},
		{"raw text yaml", "/config", "text/yaml", yamlCfg, 201, "", md5hexStr(yamlCfg)},
		{"empty config", "/config", "application/json", `{"_format_version":"3.0"}`, 201, "{}", emptyHash},
		{"no body", "/config", "application/json", ``, 400, `{"message":"expected a declarative configuration"}`, emptyHash},
		{"object without format or config: the raw body is the config", "/config", "application/json", `{"services":[]}`, 400,
			`{"code":14,"name":"invalid declarative configuration","fields":{"_format_version":"required field missing"},
			  "message":"declarative config is invalid: {_format_version=\"required field missing\"}"}`, emptyHash},
		{"bad json", "/config", "application/json", `{"_format_version":`, 400, `{"message":"Cannot parse JSON body"}`, emptyHash},
		{"json array", "/config", "application/json", `[]`, 400, `{"message":"Cannot parse JSON body"}`, emptyHash},
		{"text plain", "/config", "text/plain", yamlCfg, 415, "", emptyHash},
		{"form config", "/config", "application/x-www-form-urlencoded", "config=" + url.QueryEscape(yamlCfg), 201, "", md5hexStr(yamlCfg)},
		{"multipart config", "/config", "multipart/form-data; boundary=XX",
			"--XX\r\nContent-Disposition: form-data; name=\"config\"; filename=\"kong.yml\"\r\n\r\n" + yamlCfg + "\r\n--XX--\r\n", 201, "", ""},
		{"bad yaml", "/config", "application/yaml", "a: [", 400, "", emptyHash},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := New(Options{})
			status, body, raw := post(t, e, c.path, c.ct, c.body)
			require.Equal(t, c.status, status, raw)
			if c.wantBody != "" {
				require.JSONEq(t, c.wantBody, raw)
			}
			if c.wantHash != "" {
				require.Equal(t, c.wantHash, statusHash(t, e))
				require.Equal(t, c.wantHash, e.ConfigHash())
			}
			if status == 201 && c.wantHash != emptyHash {
				require.NotEqual(t, emptyHash, statusHash(t, e))
				require.NotNil(t, e.LoadedConfig())
				require.NotEmpty(t, body["services"])
			}
		})
	}
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '\n':
			b.WriteString(`\n`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func TestPostConfigLoadsEntities(t *testing.T) {
	e := New(Options{})
	status, body, raw := post(t, e, "/config", "application/json", okConfig)
	require.Equal(t, 201, status, raw)
	for _, k := range []string{"services", "routes", "plugins", "upstreams", "targets", "consumers", "keyauth_credentials", "acls"} {
		require.NotEmpty(t, body[k], k)
	}
	// Success body: {<entity>:{<id>:{...}}}
	for id, svc := range obj(body["services"]) {
		require.Equal(t, id, obj(svc)["id"])
		require.Equal(t, float64(80), obj(svc)["port"])
		require.Equal(t, "http", obj(svc)["protocol"])
		require.Nil(t, obj(svc)["path"])
	}
	targets := e.Entities("targets")
	require.Len(t, targets, 2)
	got := []any{targets[0]["target"], targets[1]["target"]}
	require.ElementsMatch(t, []any{"10.0.0.1:8000", "10.0.0.2:8080"}, got)

	routes := e.Entities("routes")
	require.Len(t, routes, 1)
	svc := e.Entity("services", "svc")
	require.Equal(t, map[string]any{"id": svc["id"]}, routes[0]["service"])
	plugins := e.Entities("plugins")
	require.Len(t, plugins, 2)

	// Reads work in DB-less mode.
	st, b, _ := call(t, e, "GET", "/routes/r1", nil)
	require.Equal(t, 200, st)
	require.Equal(t, "r1", obj(b)["name"])
	st, b, _ = call(t, e, "GET", "/services/svc/routes", nil)
	require.Equal(t, 200, st)
	require.Len(t, obj(b)["data"], 1)

	// Deterministic ids: the same config on another node gives the same ids.
	e2 := New(Options{})
	post(t, e2, "/config", "application/json", okConfig)
	require.Equal(t, e.Entity("routes", "r1")["id"], e2.Entity("routes", "r1")["id"])
	require.Equal(t, e.ConfigHash(), e2.ConfigHash())

	// GET /config returns YAML that loads back to the same entities.
	st, b, _ = call(t, e, "GET", "/config", nil)
	require.Equal(t, 200, st)
	cfgYAML := obj(b)["config"].(string)
	require.Contains(t, cfgYAML, "name: svc")
	e3 := New(Options{})
	st3, _, raw3 := post(t, e3, "/config", "application/yaml", cfgYAML)
	require.Equal(t, 201, st3, raw3)
	require.Equal(t, e.Entity("routes", "r1")["id"], e3.Entity("routes", "r1")["id"])
}

func TestPostConfigCheckHash(t *testing.T) {
	yamlCfg := "_format_version: \"3.0\"\nservices:\n- name: s\n  host: example.com\n"
	e := New(Options{})
	st, _, _ := post(t, e, "/config?check_hash=1", "application/yaml", yamlCfg)
	require.Equal(t, 201, st)
	h := e.ConfigHash()
	st, _, raw := post(t, e, "/config?check_hash=1", "application/yaml", yamlCfg)
	require.Equal(t, 304, st)
	require.Empty(t, raw)
	st, _, _ = post(t, e, "/config?check_hash=true", "application/yaml", yamlCfg)
	require.Equal(t, 201, st, "check_hash counts only when exactly 1")
	st, _, _ = post(t, e, "/config", "application/yaml", yamlCfg)
	require.Equal(t, 201, st)
	require.Equal(t, h, e.ConfigHash())
	st, _, _ = post(t, e, "/config?check_hash=1", "application/json", `{"config":`+jsonString(yamlCfg)+`}`)
	require.Equal(t, 304, st)

	// JSON object bodies: Kong hashes its re-encoding, equal content -> 304 too.
	st, _, _ = post(t, e, "/config?check_hash=1", "application/json", okConfig)
	require.Equal(t, 201, st)
	st, _, _ = post(t, e, "/config?check_hash=1", "application/json", okConfig)
	require.Equal(t, 304, st)

	// A JSON configuration sent as a string: the hash is the md5 of that string, which the
	// sender can compute (a restarted controller compares it with what it would send).
	st, _, _ = post(t, e, "/config?check_hash=1", "application/json", `{"config":`+jsonString(okConfig)+`}`)
	require.Equal(t, 201, st)
	require.Equal(t, md5hex([]byte(okConfig)), statusHash(t, e))
	require.NotEmpty(t, e.Entities("services"))

	// After a restart the hash is zeros and the same config loads again.
	e.Restart()
	require.Equal(t, emptyHash, statusHash(t, e))
	require.Empty(t, e.Entities("services"))
	st, _, _ = post(t, e, "/config?check_hash=1", "application/json", okConfig)
	require.Equal(t, 201, st)
}

func TestDBLessMutationsAre405(t *testing.T) {
	e := New(Options{})
	post(t, e, "/config", "application/json", okConfig)
	cases := []struct{ method, path, verb, entity string }{
		{"POST", "/services", "create", "services"},
		{"PUT", "/services/svc", "create or update", "services"},
		{"PATCH", "/services/svc", "update", "services"},
		{"DELETE", "/services/svc", "remove", "services"},
		{"POST", "/routes", "create", "routes"},
		{"DELETE", "/routes/r1", "remove", "routes"},
		{"POST", "/services/svc/routes", "create", "routes"},
		{"POST", "/upstreams/up.default.svc/targets", "create", "targets"},
		{"POST", "/consumers/alice/key-auth", "create", "keyauth_credentials"},
		{"POST", "/plugins", "create", "plugins"},
		{"POST", "/certificates", "create", "certificates"},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			st, b, _ := call(t, e, c.method, c.path, map[string]any{"name": "x"})
			require.Equal(t, 405, st)
			require.Equal(t, map[string]any{"code": float64(12), "name": "operation unsupported",
				"message": "cannot " + c.verb + " '" + c.entity + "' entities when not using a database"}, b)
		})
	}
	require.Len(t, e.Entities("services"), 1)
	require.Len(t, e.Audit(), 1, "only the POST /config changed state")
}

// TestPostConfigInvalid is the suite of invalid configurations and the
// errors Kong answers with (fields tree and flattened_errors).
func TestPostConfigInvalid(t *testing.T) {
	const sid = "0f1a2b3c-0000-4000-8000-000000000001"
	cases := []struct {
		name      string
		config    string
		fields    string // exact JSON of "fields"
		flattened string // exact JSON of "flattened_errors", when set
	}{
		{"missing format version", `{"_format_version":null,"services":[]}`,
			`{"_format_version":"required field missing"}`, `[]`},
		{"bad format version", `{"_format_version":"9.9"}`,
			`{"_format_version":"expected one of: 1.1, 2.1, 3.0"}`, ``},
		{"unknown top-level key", `{"_format_version":"3.0","servicez":[]}`,
			`{"servicez":"unknown field"}`, `[]`},
		{"service host missing", `{"_format_version":"3.0","services":[{"name":"s","tags":["a"]}]}`,
			`{"services":[{"host":"required field missing"}]}`,
			`[{"entity_type":"service","entity":{"name":"s","tags":["a"]},"entity_name":"s","entity_tags":["a"],
			   "errors":[{"type":"field","field":"host","message":"required field missing"}]}]`},
		{"service with id, bad port, unknown field", `{"_format_version":"3.0","services":[{"id":"` + sid + `","host":"h","port":70000,"foo":1}]}`,
			`{"services":[{"port":"value should be between 0 and 65535","foo":"unknown field"}]}`,
			`[{"entity_type":"service","entity":{"id":"` + sid + `","host":"h","port":70000,"foo":1},"entity_id":"` + sid + `",
			   "errors":[{"type":"field","field":"foo","message":"unknown field"},{"type":"field","field":"port","message":"value should be between 0 and 65535"}]}]`},
		{"service host with port", `{"_format_version":"3.0","services":[{"host":"h:80"}]}`,
			`{"services":[{"host":"must not have a port"}]}`, ``},
		{"service bad protocol and path", `{"_format_version":"3.0","services":[{"host":"h","protocol":"ftp","path":"a"}]}`,
			`{"services":[{"protocol":"expected one of: grpc, grpcs, http, https, tcp, tls, tls_passthrough, udp, ws, wss","path":"should start with: /"}]}`, ``},
		{"tcp service with path", `{"_format_version":"3.0","services":[{"host":"h","protocol":"tcp","path":"/a"}]}`,
			`{"services":[{"path":"value must be null"}]}`, ``},
		{"duplicate service name", `{"_format_version":"3.0","services":[{"name":"foo","host":"a"},{"name":"foo","host":"b"}]}`,
			`{"services":[null,"uniqueness violation: 'services' entity with name set to 'foo' already declared"]}`,
			`[{"entity_type":"service","entity":{"name":"foo","host":"b"},"entity_name":"foo",
			   "errors":[{"type":"entity","message":"uniqueness violation: 'services' entity with name set to 'foo' already declared"}]}]`},
		{"route without matchers, nested", `{"_format_version":"3.0","services":[{"id":"` + sid + `","host":"h","routes":[{"name":"r"}]}]}`,
			`{"services":[{"routes":[{"@entity":["must set one of 'methods', 'hosts', 'headers', 'paths', 'snis' when 'protocols' is 'https'"]}]}]}`,
			`[{"entity_type":"route","entity":{"name":"r","service":{"id":"` + sid + `"}},"entity_name":"r",
			   "errors":[{"type":"entity","message":"must set one of 'methods', 'hosts', 'headers', 'paths', 'snis' when 'protocols' is 'https'"}]}]`},
		{"route bad paths", `{"_format_version":"3.0","routes":[{"paths":["/ok","bad","/a//b","~/x(","~/(?=look)ahead\\1"]}]}`,
			`{"routes":[{"paths":[null,"should start with: / (fixed path) or ~/ (regex path)","must not have empty segments","invalid regex: '/x(' (PCRE returned: missing closing parenthesis)"]}]}`, ``},
		{"route http only", `{"_format_version":"3.0","routes":[{"protocols":["http"]}]}`,
			`{"routes":[{"@entity":["must set one of 'methods', 'hosts', 'headers', 'paths' when 'protocols' is 'http'"]}]}`, ``},
		{"route mixed protocols", `{"_format_version":"3.0","routes":[{"protocols":["http","tcp"],"paths":["/"]}]}`,
			`{"routes":[{"protocols":"these sets are mutually exclusive: ('http', 'https'), ('tcp', 'tls', 'udp'), ('tls_passthrough'), ('grpc', 'grpcs'), ('ws', 'wss')"}]}`, ``},
		{"route methods hosts headers", `{"_format_version":"3.0","routes":[{"methods":["get"],"hosts":["*.a.*"],"headers":{"Host":["x"]}}]}`,
			`{"routes":[{"methods":["invalid value: get"],"hosts":["invalid wildcard: must have at most one wildcard"],"headers":"cannot contain 'host' header"}]}`, ``},
		{"route bad redirect code", `{"_format_version":"3.0","routes":[{"paths":["/"],"https_redirect_status_code":303,"path_handling":"v2"}]}`,
			`{"routes":[{"https_redirect_status_code":"expected one of: 426, 301, 302, 307, 308","path_handling":"expected one of: v0, v1"}]}`, ``},
		{"route unknown service", `{"_format_version":"3.0","routes":[{"paths":["/"],"service":"nope"}]}`,
			`{"routes":[{"service":"invalid reference 'service: nope' (no such entry in 'services')"}]}`, ``},
		{"upstream ip name", `{"_format_version":"3.0","upstreams":[{"name":"10.0.0.1"},{"name":"a:80"},{"name":"ok","algorithm":"random","slots":5}]}`,
			`{"upstreams":[{"name":"Invalid name ('10.0.0.1'); no ip addresses allowed"},{"name":"Invalid name ('a:80'); no port allowed"},{"algorithm":"expected one of: consistent-hashing, least-connections, round-robin, latency","slots":"value should be between 10 and 65536"}]}`, ``},
		{"target bad", `{"_format_version":"3.0","upstreams":[{"name":"u","targets":[{"target":"a b"},{"target":"a","weight":70000},{"target":"a:8000"},{"target":"a"}]}]}`,
			`{"upstreams":[{"targets":[{"target":"Invalid target ('a b'); not a valid hostname or ip address"},{"weight":"value should be between 0 and 65535"},null,"@dup"]}]}`, ``},
		{"plugin not enabled", `{"_format_version":"3.0","plugins":[{"name":"nope"}]}`,
			`{"plugins":[{"name":"plugin 'nope' not enabled; add it to the 'plugins' configuration property"}]}`, ``},
		{"rate limiting needs a limit", `{"_format_version":"3.0","plugins":[{"name":"rate-limiting","config":{"policy":"x"}}]}`,
			`{"plugins":[{"config":{"policy":"expected one of: local, cluster, redis"}}]}`, ``},
		{"rate limiting no limit", `{"_format_version":"3.0","plugins":[{"name":"rate-limiting","config":{}}]}`,
			`{"plugins":[{"@entity":["at least one of these fields must be non-empty: 'config.second', 'config.minute', 'config.hour', 'config.day', 'config.month', 'config.year'"]}]}`,
			`[{"entity_type":"plugin","entity":{"name":"rate-limiting","config":{}},"entity_name":"rate-limiting",
			   "errors":[{"type":"entity","message":"at least one of these fields must be non-empty: 'config.second', 'config.minute', 'config.hour', 'config.day', 'config.month', 'config.year'"}]}]`},
		{"plugin bad config field", `{"_format_version":"3.0","plugins":[{"name":"key-auth","instance_name":"ka","config":{"key_names":"apikey","foo":true}}]}`,
			`{"plugins":[{"config":{"key_names":"expected an array","foo":"unknown field"}}]}`,
			`[{"entity_type":"plugin","entity":{"name":"key-auth","instance_name":"ka","config":{"key_names":"apikey","foo":true}},"entity_name":"key-auth",
			   "errors":[{"type":"field","field":"config.foo","message":"unknown field"},{"type":"field","field":"config.key_names","message":"expected an array"}]}]`},
		{"acl allow and deny", `{"_format_version":"3.0","plugins":[{"name":"acl","config":{"allow":["a"],"deny":["b"]}}]}`,
			`{"plugins":[{"@entity":["only one of these fields must be non-empty: 'config.allow', 'config.deny'"]}]}`, ``},
		{"duplicate plugin on a route", `{"_format_version":"3.0","routes":[{"name":"r","paths":["/"],"plugins":[{"name":"cors"},{"name":"cors"}]}]}`,
			`{"routes":[{"plugins":[null,"@dup"]}]}`, ``},
		{"consumer needs username or custom_id", `{"_format_version":"3.0","consumers":[{"tags":["t"]}]}`,
			`{"consumers":[{"@entity":["at least one of these fields must be non-empty: 'custom_id', 'username'"]}]}`, ``},
		{"acl group missing", `{"_format_version":"3.0","consumers":[{"username":"u","acls":[{}]}]}`,
			`{"consumers":[{"acls":[{"group":"required field missing"}]}]}`, ``},
		{"certificate invalid", `{"_format_version":"3.0","certificates":[{"cert":"x","key":"y","snis":[{"name":"a.com"}]}]}`,
			`{"certificates":[{"cert":"invalid certificate: PEM_read_bio_X509_AUX() failed","key":"invalid key: PEM_read_bio_PrivateKey() failed"}]}`, ``},
		{"bad tags", `{"_format_version":"3.0","services":[{"host":"h","tags":["a,b",1]}]}`,
			`{"services":[{"tags":["invalid tag 'a,b': expected printable ascii (except ` + "`,` and `/`" + `) or valid utf-8 sequences","expected a string"]}]}`, ``},
		{"services not an array", `{"_format_version":"3.0","services":{"a":1}}`,
			`{"services":"expected an array"}`, ``},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := New(Options{})
			st, body, raw := post(t, e, "/config?flatten_errors=1", "application/json", c.config)
			require.Equal(t, 400, st, raw)
			require.Equal(t, float64(14), body["code"])
			require.Equal(t, "invalid declarative configuration", body["name"])
			require.True(t, strings.HasPrefix(body["message"].(string), "declarative config is invalid: {"), body["message"])
			if strings.Contains(c.fields, "@dup") {
				// The duplicate's message names its generated id.
				require.Regexp(t, `uniqueness violation: '(targets|plugins)' entity with primary key set to '[0-9a-f-]{36}' already declared`, raw)
				fields, _ := json.Marshal(body["fields"])
				got := regexp.MustCompile(`"uniqueness violation: [^"]*"`).ReplaceAllString(string(fields), `"@dup"`)
				require.JSONEq(t, c.fields, got)
			} else {
				require.Equal(t, jsonOf(t, c.fields), body["fields"], raw)
			}
			if c.flattened != "" {
				require.Equal(t, jsonOf(t, c.flattened), body["flattened_errors"], raw)
			}
			require.Contains(t, body, "flattened_errors")
			require.Equal(t, emptyHash, e.ConfigHash(), "a rejected config is not loaded")
		})
	}
}

func TestPostConfigInvalidKeepsPrevious(t *testing.T) {
	e := New(Options{})
	st, _, _ := post(t, e, "/config", "application/json", okConfig)
	require.Equal(t, 201, st)
	h := e.ConfigHash()
	st, b, _ := post(t, e, "/config", "application/json", `{"_format_version":"3.0","services":[{"name":"x"}]}`)
	require.Equal(t, 400, st)
	require.NotContains(t, b, "flattened_errors", "flatten_errors not asked")
	require.Equal(t, h, e.ConfigHash())
	require.Len(t, e.Entities("routes"), 1)
	for _, v := range []string{"true", "1", "on", "yes"} {
		_, b, _ = post(t, e, "/config?flatten_errors="+v, "application/json", `{"_format_version":"3.0","services":[{"name":"x"}]}`)
		require.Contains(t, b, "flattened_errors", v)
	}
	_, b, _ = post(t, e, "/config?flatten_errors=0", "application/json", `{"_format_version":"3.0","services":[{"name":"x"}]}`)
	require.NotContains(t, b, "flattened_errors")
}

func TestDBLessCertificates(t *testing.T) {
	cert, key := testCert(t, "a.example.com", false, false)
	cfg := map[string]any{"_format_version": "3.0", "certificates": []any{
		map[string]any{"cert": cert, "key": key, "snis": []any{map[string]any{"name": "a.example.com"}, "b.example.com"}},
	}}
	e := New(Options{})
	st, b, _ := call(t, e, "POST", "/config", cfg)
	require.Equal(t, 201, st, b)
	require.Len(t, e.Entities("snis"), 2)
	certs := e.Entities("certificates")
	require.Equal(t, []any{"a.example.com", "b.example.com"}, certs[0]["snis"])
	st, _, _ = call(t, e, "GET", "/certificates/b.example.com", nil)
	require.Equal(t, 200, st)

	other, _ := testCert(t, "other", false, false)
	cfg["certificates"].([]any)[0].(map[string]any)["cert"] = other
	st, b, _ = call(t, e, "POST", "/config", cfg)
	require.Equal(t, 400, st)
	require.Equal(t, jsonOf(t, `{"certificates":[{"@entity":["certificate does not match key"]}]}`), obj(b)["fields"])
}
