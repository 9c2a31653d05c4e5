package kongrules

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func cfg(t *testing.T, js string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(js), &m))
	return m
}

func TestValidatePluginConfig(t *testing.T) {
	cases := []struct {
		name, plugin, config string
		want                 []FieldError
	}{
		{"valid", "rate-limiting", `{"minute":10}`, nil},
		{"no limit", "rate-limiting", `{}`, []FieldError{{"", "at least one of these fields must be non-empty: " +
			"'config.second', 'config.minute', 'config.hour', 'config.day', 'config.month', 'config.year'"}}},
		{"limits out of order", "rate-limiting", `{"minute":10,"hour":5}`,
			[]FieldError{{"config.hour", "The limit for hour(5) cannot be lower than the limit for minute(10)"}}},
		{"bad type", "key-auth", `{"key_names":"apikey"}`, []FieldError{{"config.key_names", "expected an array"}}},
		{"bad element", "ip-restriction", `{"allow":["10.0.0.0/8","nope"]}`,
			[]FieldError{{"config.allow.2", "invalid ip or cidr range: 'nope'"}}},
		{"unknown field", "cors", `{"origin":["*"]}`, []FieldError{{"config.origin", "unknown field"}}},
		{"unknown plugin", "nope", `{}`, []FieldError{{"name", "plugin 'nope' not enabled; add it to the 'plugins' configuration property"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errs := ValidatePluginConfig(c.plugin, cfg(t, c.config))
			require.Equal(t, c.want, errs)
		})
	}
}

func TestValidatePluginConfigFillsDefaults(t *testing.T) {
	filled, errs := ValidatePluginConfig("rate-limiting", cfg(t, `{"minute":10,"redis_host":"r.example.com"}`))
	require.Empty(t, errs)
	require.Equal(t, "local", filled["policy"])
	require.Equal(t, "consumer", filled["limit_by"])
	redis := filled["redis"].(map[string]any)
	require.Equal(t, "r.example.com", redis["host"], "the deprecated shorthand lands in its record")
	require.Equal(t, int64(6379), redis["port"])
	require.Nil(t, filled["hour"], "absent fields without a default are null")
}

func TestKnownPlugins(t *testing.T) {
	for _, n := range []string{"key-auth", "basic-auth", "jwt", "acl", "oauth2", "hmac-auth", "rate-limiting",
		"request-transformer", "response-transformer", "cors", "ip-restriction", "request-size-limiting",
		"proxy-cache", "correlation-id", "prometheus", "request-termination", "mtls-auth"} {
		require.True(t, KnownPlugin(n), n)
		require.NotNil(t, PluginDefaults(n), n)
	}
	require.False(t, KnownPlugin("nope"))
	require.Nil(t, PluginDefaults("nope"))
	require.Contains(t, PluginNames(true), "mtls-auth")
	require.NotContains(t, PluginNames(false), "mtls-auth", "mtls-auth is bundled with Kong Enterprise only")
}

func TestNewPluginRules(t *testing.T) {
	cases := []struct {
		name, plugin, config string
		want                 []FieldError
	}{
		{"oauth2 needs a flow", "oauth2", `{}`, []FieldError{{"config", "at least one of these fields must be true: " +
			"enable_authorization_code, enable_implicit_grant, enable_client_credentials, enable_password_grant"}}},
		{"oauth2 mandatory scope needs scopes", "oauth2", `{"enable_client_credentials":true,"mandatory_scope":true}`,
			[]FieldError{{"config.scopes", "required field missing"}}},
		{"oauth2 valid", "oauth2", `{"enable_client_credentials":true}`, nil},
		{"hmac-auth bad algorithm", "hmac-auth", `{"algorithms":["md5"]}`,
			[]FieldError{{"config.algorithms.1", "expected one of: hmac-sha1, hmac-sha256, hmac-sha384, hmac-sha512"}}},
		{"hmac-auth clock skew", "hmac-auth", `{"clock_skew":0}`, []FieldError{{"config.clock_skew", "value must be greater than 0"}}},
		{"request-size-limiting unit", "request-size-limiting", `{"size_unit":"gigabytes"}`,
			[]FieldError{{"config.size_unit", "expected one of: megabytes, kilobytes, bytes"}}},
		{"proxy-cache needs a strategy", "proxy-cache", `{}`, []FieldError{{"config.strategy", "required field missing"}}},
		{"proxy-cache memory", "proxy-cache", `{"strategy":"memory"}`, nil},
		{"proxy-cache unknown dict", "proxy-cache", `{"strategy":"memory","memory":{"dictionary_name":"nope"}}`,
			[]FieldError{{"", "missing shared dict 'nope'"}}},
		{"proxy-cache empty codes", "proxy-cache", `{"strategy":"memory","response_code":[]}`,
			[]FieldError{{"config.response_code", "length must be at least 1"}}},
		{"cors origin regex", "cors", `{"origins":["*","https://(a|b).example.com","(bad"]}`,
			[]FieldError{{"config.origins.3", "'(bad' is not a valid regex"}}},
		{"mtls-auth needs CAs", "mtls-auth", `{}`, []FieldError{{"config.ca_certificates", "required field missing"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errs := ValidatePluginConfig(c.plugin, cfg(t, c.config))
			require.Equal(t, c.want, errs)
		})
	}
}
