package kongemu

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestValidation checks spec section 3 through POST /schemas/{entity}/validate:
// fields and entity checks only, no uniqueness and no foreign keys.
func TestValidation(t *testing.T) {
	cases := []struct {
		name   string
		path   string
		body   string
		fields string // "" means valid (200)
	}{
		// services
		{"service url shorthand", "services", `{"url":"https://example.com:8443/api"}`, ""},
		{"service url without host", "services", `{"url":"nope"}`, `{"url":"missing host in url"}`},
		{"service ip host", "services", `{"host":"10.1.2.3"}`, ""},
		{"service ipv6 host", "services", `{"host":"::1"}`, ""},
		{"service bad host", "services", `{"host":"a b"}`, `{"host":"invalid value: a b"}`},
		{"service empty segments", "services", `{"host":"h","path":"/a//b"}`, `{"path":"must not have empty segments"}`},
		{"service bad percent", "services", `{"host":"h","path":"/a%zz"}`, `{"path":"invalid url-encoded value: '%zz'"}`},
		{"service retries range", "services", `{"host":"h","retries":40000}`, `{"retries":"value should be between 0 and 32767"}`},
		{"service timeout range", "services", `{"host":"h","read_timeout":0}`, `{"read_timeout":"value should be between 1 and 2147483646"}`},
		{"service tls_verify on http", "services", `{"host":"h","tls_verify":true}`, `{"tls_verify":"value must be null"}`},
		{"service tls_verify on https", "services", `{"host":"h","protocol":"https","tls_verify":true}`, ""},
		{"service grpc path", "services", `{"host":"h","protocol":"grpc","path":"/x"}`, `{"path":"value must be null"}`},
		{"service empty string", "services", `{"host":""}`, `{"host":"length must be at least 1"}`},
		{"service bad id", "services", `{"host":"h","id":"nope"}`, `{"id":"expected a valid UUID"}`},
		// routes
		{"route regex named group", "routes", `{"paths":["~/(?<id>\\d+)$"]}`, ""},
		// PCRE takes look-around and backreferences; the traditional_compatible router (the
		// emulator's default) compiles the route's regexes with Rust, which refuses them.
		{"route regex lookahead", "routes", `{"paths":["~/a(?=b)","~/(?!x)y","~/(?<=a)b"]}`,
			`{"@entity": ["Router Expression failed validation:  --> 1:1\n  |\n1 | http.path ~ r#\"^/a(?=b)\"#\n  | ^-----------------------^\n  |\n  = regex parse error:\n    ^/a(?=b)\nerror: look-around, including look-ahead and look-behind, is not supported"]}`},
		{"route regex backreference", "routes", `{"paths":["~/(a)\\1"]}`,
			`{"@entity": ["Router Expression failed validation:  --> 1:1\n  |\n1 | http.path ~ r#\"^/(a)\\1\"#\n  | ^----------------------^\n  |\n  = regex parse error:\n    ^/(a)\\1\nerror: backreferences are not supported"]}`},
		{"route header regex Rust refuses", "routes", `{"paths":["/"],"headers":{"X-V":["~*[[]v"]}}`,
			`{"@entity": ["Router Expression failed validation:  --> 1:1\n  |\n1 | http.headers.x_v ~ r#\"[[]v\"#\n  | ^--------------------------^\n  |\n  = regex parse error:\n    [[]v\nerror: unclosed character class"]}`},
		{"route regex possessive", "routes", `{"paths":["~/a++b"]}`, ""},
		{"route regex big repeat", "routes", `{"paths":["~/x{2000}"]}`, ""},
		{"route regex unclosed group", "routes", `{"paths":["~/a("]}`, `{"paths":["invalid regex: '/a(' (PCRE returned: missing closing parenthesis)"]}`},
		{"route regex unclosed class", "routes", `{"paths":["~/[a"]}`, `{"paths":["invalid regex: '/[a' (PCRE returned: missing terminating ] for character class)"]}`},
		{"route regex nothing to repeat", "routes", `{"paths":["~/a|*b"]}`, `{"paths":["invalid regex: '/a|*b' (PCRE returned: quantifier does not follow a repeatable item)"]}`},
		{"route regex bad range", "routes", `{"paths":["~/x{3,2}"]}`, `{"paths":["invalid regex: '/x{3,2}' (PCRE returned: numbers out of order in {} quantifier)"]}`},
		{"route path no slash", "routes", `{"paths":["a"]}`, `{"paths":["should start with: / (fixed path) or ~/ (regex path)"]}`},
		{"route fixed path bad chars", "routes", `{"paths":["/a b"]}`, `{"paths":["invalid path: '/a b' (characters outside of the reserved list of RFC 3986 found)"]}`},
		{"route hosts wildcards", "routes", `{"hosts":["*.example.com","example.*","example.com:8080"]}`, ""},
		{"route host wildcard in the middle", "routes", `{"hosts":["a.*.com"]}`, `{"hosts":["invalid wildcard: must be placed at leftmost or rightmost label"]}`},
		{"route header host", "routes", `{"headers":{"host":["a"]}}`, `{"headers":"cannot contain 'host' header"}`},
		{"route headers ok", "routes", `{"headers":{"x-version":["1","2"]}}`, ""},
		{"route methods lowercase", "routes", `{"methods":["GET","post"]}`, `{"methods":[null,"invalid value: post"]}`},
		{"route https only needs matcher", "routes", `{"protocols":["https"]}`,
			`{"@entity":["must set one of 'methods', 'hosts', 'headers', 'paths', 'snis' when 'protocols' is 'https'"]}`},
		{"route https snis only", "routes", `{"protocols":["https"],"snis":["a.example.com"]}`, ""},
		{"route http with snis", "routes", `{"protocols":["http"],"paths":["/"],"snis":["a.example.com"]}`,
			`{"snis":"'snis' can only be set when 'protocols' is 'grpcs', 'https', 'tls' or 'tls_passthrough'"}`},
		{"route tcp needs sources", "routes", `{"protocols":["tcp"]}`,
			`{"@entity":["must set one of 'sources', 'destinations', 'snis' when 'protocols' is 'tcp', 'tls' or 'udp'"]}`},
		{"route tcp destinations", "routes", `{"protocols":["tcp"],"destinations":[{"ip":"10.0.0.0/8","port":80}]}`, ""},
		{"route grpc", "routes", `{"protocols":["grpc","grpcs"],"paths":["/svc"]}`, ""},
		{"route regex_priority type", "routes", `{"paths":["/"],"regex_priority":1.5}`, `{"regex_priority":"expected an integer"}`},
		// upstreams and targets
		{"upstream hash_on header", "upstreams", `{"name":"u","hash_on":"header"}`, `{"hash_on_header":"required field missing"}`},
		{"upstream hash_on cookie", "upstreams", `{"name":"u","hash_on":"cookie","hash_on_cookie":"c"}`, ""},
		{"upstream fallback without hash_on", "upstreams", `{"name":"u","hash_fallback":"ip"}`, `{"hash_fallback":"expected one of: none"}`},
		{"upstream healthchecks", "upstreams", `{"name":"u","healthchecks":{"active":{"healthy":{"interval":5,"successes":300}}}}`,
			`{"healthchecks":{"active":{"healthy":{"successes":"value should be between 0 and 255"}}}}`},
		{"target ipv6", "targets", `{"target":"[::1]:80","upstream":{"id":"00000000-0000-4000-8000-000000000001"}}`, ""},
		{"target upstream missing", "targets", `{"target":"a"}`, `{"upstream":"required field missing"}`},
		// consumers, credentials
		{"consumer custom_id only", "consumers", `{"custom_id":"c"}`, ""},
		{"acl group required", "acls", `{"consumer":{"id":"00000000-0000-4000-8000-000000000001"}}`, `{"group":"required field missing"}`},
		{"jwt algorithm", "jwt_secrets", `{"consumer":{"id":"00000000-0000-4000-8000-000000000001"},"algorithm":"XX"}`,
			`{"algorithm":"expected one of: HS256, HS384, HS512, RS256, RS384, RS512, ES256, ES384, ES512, PS256, PS384, PS512, EdDSA"}`},
		{"jwt rs256 needs key", "jwt_secrets", `{"consumer":{"id":"00000000-0000-4000-8000-000000000001"},"algorithm":"RS256"}`,
			`{"rsa_public_key":"required field missing"}`},
		{"oauth2 redirect uri", "oauth2_credentials", `{"consumer":{"id":"00000000-0000-4000-8000-000000000001"},"name":"a","redirect_uris":["nope"]}`,
			`{"redirect_uris":["cannot parse 'nope'"]}`},
		// plugins
		{"plugin key-auth defaults", "plugins", `{"name":"key-auth"}`, ""},
		{"plugin basic-auth", "plugins", `{"name":"basic-auth","config":{"hide_credentials":"yes"}}`, `{"config":{"hide_credentials":"expected a boolean"}}`},
		{"plugin acl neither", "plugins", `{"name":"acl","config":{}}`, `{"@entity":["at least one of these fields must be non-empty: 'config.allow', 'config.deny'"]}`},
		{"plugin jwt claims", "plugins", `{"name":"jwt","config":{"claims_to_verify":["iat"]}}`, `{"config":{"claims_to_verify":["expected one of: exp, nbf"]}}`},
		{"plugin cors method", "plugins", `{"name":"cors","config":{"methods":["FETCH"]}}`,
			`{"config":{"methods":["expected one of: GET, HEAD, PUT, PATCH, POST, DELETE, OPTIONS, TRACE, CONNECT"]}}`},
		{"plugin rate-limiting ok", "plugins", `{"name":"rate-limiting","config":{"second":5,"hour":10000}}`, ""},
		{"plugin rate-limiting zero", "plugins", `{"name":"rate-limiting","config":{"second":0}}`, `{"config":{"second":"value must be greater than 0"}}`},
		{"plugin rate-limiting redis needs host", "plugins", `{"name":"rate-limiting","config":{"minute":1,"policy":"redis"}}`,
			`{"config":{"redis":{"host":"required field missing"}}}`},
		{"plugin rate-limiting redis shorthand", "plugins", `{"name":"rate-limiting","config":{"minute":1,"policy":"redis","redis_host":"r"}}`, ""},
		{"plugin request-transformer", "plugins", `{"name":"request-transformer","config":{"add":{"headers":["x:1"]},"http_method":"get"}}`,
			`{"config":{"http_method":"invalid value: get"}}`},
		{"plugin response-transformer", "plugins", `{"name":"response-transformer","config":{"remove":{"headers":["x"]}}}`, ""},
		{"plugin ip-restriction", "plugins", `{"name":"ip-restriction","config":{"allow":["10.0.0.0/8","nope"]}}`,
			`{"config":{"allow":[null,"invalid ip or cidr range: 'nope'"]}}`},
		{"plugin correlation-id", "plugins", `{"name":"correlation-id","config":{"generator":"random"}}`,
			`{"config":{"generator":"expected one of: uuid, uuid#counter, tracker"}}`},
		{"plugin request-termination", "plugins", `{"name":"request-termination","config":{"status_code":700}}`,
			`{"config":{"status_code":"value should be between 100 and 599"}}`},
		{"plugin prometheus unknown", "plugins", `{"name":"prometheus","config":{"per_route":true}}`, `{"config":{"per_route":"unknown field"}}`},
		{"plugin protocols", "plugins", `{"name":"cors","protocols":["tcp"]}`, `{"protocols":["expected one of: grpc, grpcs, http, https"]}`},
		{"plugin not enabled", "plugins", `{"name":"nope"}`, `{"name":"plugin 'nope' not enabled; add it to the 'plugins' configuration property"}`},
	}
	e := New(Options{Mode: Postgres})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := "/schemas/" + c.path + "/validate"
			if c.path == "plugins" {
				path = "/schemas/plugins/validate"
			}
			st, b, _ := call(t, e, "POST", path, c.body)
			if c.fields == "" {
				require.Equal(t, 200, st, "%v", b)
				require.Equal(t, map[string]any{"message": "schema validation successful"}, b)
				return
			}
			require.Equal(t, 400, st, "%v", b)
			require.Equal(t, float64(2), obj(b)["code"])
			require.Equal(t, "schema violation", obj(b)["name"])
			require.Equal(t, jsonOf(t, c.fields), obj(b)["fields"])
		})
	}
}
