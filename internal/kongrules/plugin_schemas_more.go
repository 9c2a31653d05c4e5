package kongrules

// Schemas of the bundled plugins added after the first set (kong/plugins/<name>/schema.lua,
// Kong 3.9/3.10).

var protocolsHTTP = Strs("grpc", "grpcs", "http", "https")

// kongSharedDicts are the lua_shared_dict names of Kong's default nginx template, which the
// proxy-cache memory strategy may use.
var kongSharedDicts = map[string]bool{
	"kong": true, "kong_locks": true, "kong_db_cache": true, "kong_db_cache_miss": true,
	"kong_core_db_cache": true, "kong_core_db_cache_miss": true, "kong_secrets": true,
	"kong_healthchecks": true, "kong_cluster_events": true, "kong_rate_limiting_counters": true,
	"prometheus_metrics": true,
}

func init() {
	registerPlugin(&PluginSchema{Name: "hmac-auth", Priority: 1030, NoConsumer: true, Protocols: protocolsHTTP,
		Config: []*Field{
			BoolField("hide_credentials", false),
			{Name: "clock_skew", Type: Number, Default: 300, GT: gt(0)},
			{Name: "anonymous", Type: String},
			BoolField("validate_request_body", false),
			StrArray("enforce_headers", []any{}),
			{Name: "algorithms", Type: Array, Default: Strs("hmac-sha1", "hmac-sha256", "hmac-sha384", "hmac-sha512"),
				Elem: &Field{Type: String, OneOf: Strs("hmac-sha1", "hmac-sha256", "hmac-sha384", "hmac-sha512")}},
			{Name: "realm", Type: String},
		}})
	registerPlugin(&PluginSchema{Name: "oauth2", Priority: 1400, NoConsumer: true, Protocols: protocolsHTTP,
		Config: []*Field{
			StrArray("scopes", nil),
			BoolField("mandatory_scope", false),
			{Name: "provision_key", Type: String, Unique: true, Auto: true, Required: true},
			{Name: "token_expiration", Type: Number, Default: 7200, Required: true},
			BoolField("enable_authorization_code", false),
			BoolField("enable_implicit_grant", false),
			BoolField("enable_client_credentials", false),
			BoolField("enable_password_grant", false),
			BoolField("hide_credentials", false),
			BoolField("accept_http_if_already_terminated", false),
			{Name: "anonymous", Type: String},
			BoolField("global_credentials", false),
			{Name: "auth_header_name", Type: String, Default: "authorization"},
			{Name: "refresh_token_ttl", Type: Number, Default: 1209600, Required: true, Between: Between(0, 100000000)},
			BoolField("reuse_refresh_token", false),
			{Name: "persistent_refresh_token", Type: Boolean, Default: false, Required: true},
			{Name: "pkce", Type: String, Default: "lax", OneOf: Strs("none", "lax", "strict")},
			{Name: "realm", Type: String},
		},
		Checks: []EntityCheck{checkOAuth2},
	})
	registerPlugin(&PluginSchema{Name: "request-size-limiting", Priority: 951, Protocols: protocolsHTTP,
		Config: []*Field{
			{Name: "allowed_payload_size", Type: Integer, Default: 128},
			{Name: "size_unit", Type: String, Default: "megabytes", Required: true, OneOf: Strs("megabytes", "kilobytes", "bytes")},
			BoolField("require_content_length", false),
		}})
	registerPlugin(&PluginSchema{Name: "proxy-cache", Priority: 100,
		Config: []*Field{
			{Name: "response_code", Type: Array, Default: Ints(200, 301, 404), Required: true, LenMin: 1,
				Elem: &Field{Type: Integer, Between: Between(100, 900)}, Check: lenMin1},
			{Name: "request_method", Type: Array, Default: Strs("GET", "HEAD"), Required: true,
				Elem: &Field{Type: String, OneOf: Strs("HEAD", "GET", "POST", "PATCH", "PUT")}},
			{Name: "content_type", Type: Array, Default: Strs("text/plain", "application/json"), Required: true,
				Elem: &Field{Type: String}},
			{Name: "cache_ttl", Type: Integer, Default: 300, GT: gt(0)},
			{Name: "strategy", Type: String, Required: true, OneOf: Strs("memory")},
			BoolField("cache_control", false),
			{Name: "ignore_uri_case", Type: Boolean, Default: false},
			{Name: "storage_ttl", Type: Integer},
			{Name: "memory", Type: Record, Default: map[string]any{}, Required: true, Fields: []*Field{
				{Name: "dictionary_name", Type: String, Default: "kong_db_cache", Required: true},
			}},
			StrArray("vary_query_params", nil),
			StrArray("vary_headers", Strs("Accept-Encoding")),
			{Name: "response_headers", Type: Record, Default: map[string]any{}, Required: true, Fields: []*Field{
				{Name: "Age", Type: Boolean, Default: true},
				{Name: "X-Cache-Status", Type: Boolean, Default: true},
				{Name: "X-Cache-Key", Type: Boolean, Default: true},
			}},
		},
		Checks: []EntityCheck{checkProxyCacheDict},
	})
	registerPlugin(&PluginSchema{Name: "mtls-auth", Priority: 1600, NoConsumer: true, Enterprise: true,
		Protocols: protocolsHTTP,
		Config: []*Field{
			{Name: "anonymous", Type: String},
			{Name: "consumer_by", Type: Array, Default: Strs("username", "custom_id"), LenMin: 1,
				Elem: &Field{Type: String, OneOf: Strs("username", "custom_id")}, Check: lenMin1},
			{Name: "ca_certificates", Type: Array, Required: true, Elem: &Field{Type: String, UUID: true}},
			{Name: "cache_ttl", Type: Number, Default: 60, Required: true},
			BoolField("skip_consumer_lookup", false),
			BoolField("allow_partial_chain", false),
			{Name: "authenticated_group_by", Type: String, Default: "CN", OneOf: Strs("CN", "DN")},
			{Name: "revocation_check_mode", Type: String, Default: "IGNORE_CA_ERROR",
				OneOf: Strs("SKIP", "IGNORE_CA_ERROR", "STRICT")},
			{Name: "http_timeout", Type: Number, Default: 30000},
			{Name: "cert_cache_ttl", Type: Number, Default: 60000},
			BoolField("send_ca_dn", false),
			{Name: "default_consumer", Type: String},
			{Name: "http_proxy_host", Type: String},
			{Name: "http_proxy_port", Type: Integer, Between: Between(0, 65535)},
			{Name: "https_proxy_host", Type: String},
			{Name: "https_proxy_port", Type: Integer, Between: Between(0, 65535)},
		}})
}

// lenMin1 is len_min = 1 on an array.
func lenMin1(v any) any {
	if l, _ := v.([]any); len(l) == 0 {
		return "length must be at least 1"
	}
	return ""
}

// checkOAuth2 is the config record's custom validator (one grant flow enabled) and its
// conditional (mandatory_scope needs scopes).
func checkOAuth2(e map[string]any) ([]string, map[string]any) {
	c, _ := e["config"].(map[string]any)
	flows := false
	for _, f := range []string{"enable_authorization_code", "enable_implicit_grant", "enable_client_credentials", "enable_password_grant"} {
		flows = flows || c[f] == true
	}
	if !flows {
		return nil, ErrTree{"config": "at least one of these fields must be true: enable_authorization_code, " +
			"enable_implicit_grant, enable_client_credentials, enable_password_grant"}
	}
	if c["mandatory_scope"] == true && IsNull(c["scopes"]) {
		return nil, ErrTree{"config": ErrTree{"scopes": "required field missing"}}
	}
	return nil, nil
}

func checkProxyCacheDict(e map[string]any) ([]string, map[string]any) {
	c, _ := e["config"].(map[string]any)
	mem, _ := c["memory"].(map[string]any)
	if name, _ := mem["dictionary_name"].(string); c["strategy"] == "memory" && !kongSharedDicts[name] {
		return []string{"missing shared dict '" + name + "'"}, nil
	}
	return nil, nil
}
