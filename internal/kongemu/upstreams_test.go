package kongemu

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUpstreamRules checks the upstream fields KongUpstreamPolicy produces through POST
// /schemas/upstreams/validate, on Kong 3.10 and 3.11 (sticky sessions).
func TestUpstreamRules(t *testing.T) {
	v311 := Options{Version: "3.11.0"}
	cases := []struct {
		name   string
		opts   Options
		body   string
		fields string // "" means valid
	}{
		{"consistent hashing on a header", Options{}, `{"name":"u","algorithm":"consistent-hashing","hash_on":"header","hash_on_header":"x-user"}`, ""},
		{"header name required", Options{}, `{"name":"u","hash_on":"header"}`, `{"hash_on_header":"required field missing"}`},
		{"cookie name required", Options{}, `{"name":"u","hash_on":"cookie"}`, `{"hash_on_cookie":"required field missing"}`},
		{"query arg and uri capture required", Options{}, `{"name":"u","hash_on":"query_arg","hash_fallback":"uri_capture"}`,
			`{"hash_on_query_arg":"required field missing","hash_fallback_uri_capture":"required field missing"}`},
		{"fallback needs hash_on", Options{}, `{"name":"u","hash_fallback":"ip"}`, `{"hash_fallback":"expected one of: none"}`},
		{"no fallback after cookie", Options{}, `{"name":"u","hash_on":"cookie","hash_on_cookie":"c","hash_fallback":"ip"}`,
			`{"hash_fallback":"expected one of: none"}`},
		{"fallback differs from hash_on", Options{}, `{"name":"u","hash_on":"ip","hash_fallback":"ip"}`,
			`{"hash_fallback":"expected one of: none, consumer, header, cookie, path, query_arg, uri_capture"}`},
		{"cookie fallback needs the cookie", Options{}, `{"name":"u","hash_on":"ip","hash_fallback":"cookie"}`,
			`{"hash_on_cookie":"required field missing"}`},
		{"distinct headers", Options{}, `{"name":"u","hash_on":"header","hash_on_header":"a","hash_fallback":"header","hash_fallback_header":"a"}`,
			`{"@entity":["values of these fields must be distinct: 'hash_on_header', 'hash_fallback_header'"]}`},
		{"bad cookie name", Options{}, `{"name":"u","hash_on":"cookie","hash_on_cookie":"a b"}`,
			`{"hash_on_cookie":"contains one or more invalid characters. ASCII control characters (0-31;127), space, tab and the characters ()<>@,;:\\\"/?={}[] are not allowed."}`},
		{"slots range", Options{}, `{"name":"u","slots":65537}`, `{"slots":"value should be between 10 and 65536"}`},
		{"healthchecks", Options{}, `{"name":"u","healthchecks":{"active":{"type":"https","http_path":"/healthz","healthy":{"interval":5,"successes":2},
			"unhealthy":{"interval":5,"http_failures":3}},"passive":{"unhealthy":{"http_failures":5}},"threshold":50}}`, ""},
		{"healthchecks out of range", Options{}, `{"name":"u","healthchecks":{"active":{"concurrency":0,"healthy":{"successes":300}},"threshold":101}}`,
			`{"healthchecks":{"active":{"concurrency":"value should be between 1 and 2147483648","healthy":{"successes":"value should be between 0 and 255"}},
			  "threshold":"value should be between 0 and 100"}}`},
		{"sticky sessions before 3.11", Options{}, `{"name":"u","algorithm":"sticky-sessions","sticky_sessions_cookie":"s"}`,
			`{"algorithm":"expected one of: consistent-hashing, least-connections, round-robin, latency","sticky_sessions_cookie":"unknown field"}`},
		{"sticky sessions", v311, `{"name":"u","algorithm":"sticky-sessions","sticky_sessions_cookie":"s","sticky_sessions_cookie_path":"/app"}`, ""},
		{"sticky sessions need the cookie", v311, `{"name":"u","algorithm":"sticky-sessions"}`, `{"sticky_sessions_cookie":"required field missing"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, b, _ := call(t, New(c.opts), "POST", "/schemas/upstreams/validate", c.body)
			requireRefused(t, st, 200, c.fields, obj(b)["fields"], b)
		})
	}
}

// TestUpstreamDefaults: what Kong stores for an upstream given only its name.
func TestUpstreamDefaults(t *testing.T) {
	for _, v := range []string{"3.10.0", "3.11.0"} {
		e := New(Options{Mode: Postgres, Version: v})
		st, b, _ := call(t, e, "PUT", "/upstreams/u", map[string]any{})
		require.Equal(t, 200, st)
		u := obj(b)
		require.Equal(t, "round-robin", u["algorithm"])
		require.Equal(t, float64(10000), u["slots"])
		hc := obj(u["healthchecks"])
		require.Equal(t, "/", obj(hc["active"])["http_path"])
		require.Equal(t, []any{float64(429), float64(500), float64(503)}, obj(obj(hc["passive"])["unhealthy"])["http_statuses"])
		_, sticky := u["sticky_sessions_cookie_path"]
		require.Equal(t, v == "3.11.0", sticky, v)
	}
}
