package kongrules

func init() {
	registerPlugin(&PluginSchema{Name: "key-auth", NoConsumer: true, Priority: 1250, Config: []*Field{
		strArrayReq("key_names", Strs("apikey")),
		BoolField("hide_credentials", false),
		{Name: "anonymous", Type: String},
		BoolField("key_in_header", true),
		BoolField("key_in_query", true),
		BoolField("key_in_body", false),
		BoolField("run_on_preflight", true),
		{Name: "realm", Type: String},
	}})
	registerPlugin(&PluginSchema{Name: "basic-auth", NoConsumer: true, Priority: 1100, Config: []*Field{
		{Name: "anonymous", Type: String},
		BoolField("hide_credentials", false),
		{Name: "realm", Type: String, Default: "service", Required: true},
	}})
	registerPlugin(&PluginSchema{Name: "acl", NoConsumer: true, Priority: 950, Config: []*Field{
		StrArray("allow", nil),
		StrArray("deny", nil),
		BoolField("hide_groups_header", false),
		BoolField("include_consumer_groups", false),
		BoolField("always_use_authenticated_groups", false),
	},
		Checks: []EntityCheck{OnlyOneOf("config.allow", "config.deny"), AtLeastOneOf("config.allow", "config.deny")},
		EntityChecks: []any{
			map[string]any{"only_one_of": Strs("config.allow", "config.deny")},
			map[string]any{"at_least_one_of": Strs("config.allow", "config.deny")},
		}})
	registerPlugin(&PluginSchema{Name: "jwt", NoConsumer: true, Priority: 1450, Config: []*Field{
		{Name: "uri_param_names", Type: Set, Default: Strs("jwt"), Elem: &Field{Type: String}},
		{Name: "cookie_names", Type: Set, Default: []any{}, Elem: &Field{Type: String}},
		{Name: "key_claim_name", Type: String, Default: "iss"},
		BoolField("secret_is_base64", false),
		{Name: "claims_to_verify", Type: Set, Elem: &Field{Type: String, OneOf: Strs("exp", "nbf")}},
		{Name: "anonymous", Type: String},
		BoolField("run_on_preflight", true),
		{Name: "maximum_expiration", Type: Number, Default: 0, Between: Between(0, 31536000)},
		{Name: "header_names", Type: Set, Default: Strs("authorization"), Elem: &Field{Type: String}},
		{Name: "realm", Type: String},
	}})
	registerPlugin(&PluginSchema{Name: "cors", NoConsumer: true, Priority: 2000, Config: []*Field{
		{Name: "origins", Type: Array, Elem: &Field{Type: String, Check: checkCORSOrigin}},
		StrArray("headers", nil),
		StrArray("exposed_headers", nil),
		{Name: "methods", Type: Array, Default: Strs("GET", "HEAD", "PUT", "PATCH", "POST", "DELETE", "OPTIONS", "TRACE", "CONNECT"),
			Elem: &Field{Type: String, OneOf: Strs("GET", "HEAD", "PUT", "PATCH", "POST", "DELETE", "OPTIONS", "TRACE", "CONNECT")}},
		{Name: "max_age", Type: Number},
		BoolField("credentials", false),
		BoolField("private_network", false),
		BoolField("preflight_continue", false),
		BoolField("allow_origin_absent", true),
	}})
	registerPlugin(&PluginSchema{Name: "rate-limiting", Priority: 910, Config: []*Field{
		numGT0("second"), numGT0("minute"), numGT0("hour"), numGT0("day"), numGT0("month"), numGT0("year"),
		{Name: "limit_by", Type: String, Default: "consumer",
			OneOf: Strs("consumer", "credential", "ip", "service", "header", "path", "consumer-group")},
		{Name: "header_name", Type: String},
		{Name: "path", Type: String, Check: CheckServicePath},
		{Name: "policy", Type: String, Default: "local", OneOf: Strs("local", "cluster", "redis")},
		BoolField("fault_tolerant", true),
		{Name: "redis", Type: Record, Required: true, Default: map[string]any{}, Fields: []*Field{
			{Name: "host", Type: String},
			{Name: "port", Type: Integer, Default: 6379, Between: Between(0, 65535)},
			{Name: "timeout", Type: Integer, Default: 2000, Between: Between(0, 2147483646)},
			{Name: "connect_timeout", Type: Integer, Default: 2000, Between: Between(0, 2147483646)},
			{Name: "send_timeout", Type: Integer, Default: 2000, Between: Between(0, 2147483646)},
			{Name: "read_timeout", Type: Integer, Default: 2000, Between: Between(0, 2147483646)},
			{Name: "username", Type: String},
			{Name: "password", Type: String},
			{Name: "database", Type: Integer, Default: 0},
			BoolField("ssl", false),
			BoolField("ssl_verify", false),
			{Name: "server_name", Type: String},
		}},
		BoolField("hide_client_headers", false),
		{Name: "error_code", Type: Number, Default: 429, GT: gt0()},
		{Name: "error_message", Type: String, Default: "API rate limit exceeded"},
		{Name: "sync_rate", Type: Number, Default: -1},
	},
		Shorthands: map[string]string{
			"redis_host": "redis.host", "redis_port": "redis.port", "redis_password": "redis.password",
			"redis_username": "redis.username", "redis_ssl": "redis.ssl", "redis_ssl_verify": "redis.ssl_verify",
			"redis_server_name": "redis.server_name", "redis_timeout": "redis.timeout", "redis_database": "redis.database",
		},
		Checks: []EntityCheck{
			AtLeastOneOf("config.second", "config.minute", "config.hour", "config.day", "config.month", "config.year"),
			checkRateLimitOrder,
			checkRateLimitPolicy,
		},
		EntityChecks: []any{map[string]any{"at_least_one_of": Strs("config.second", "config.minute", "config.hour", "config.day", "config.month", "config.year")}},
	})
	registerPlugin(&PluginSchema{Name: "request-transformer", Priority: 801, Config: []*Field{
		{Name: "http_method", Type: String, Check: CheckMethod},
		transformRecord("remove", "body", "headers", "querystring"),
		transformRecord("rename", "body", "headers", "querystring"),
		transformRecord("replace", "body", "headers", "querystring", "uri"),
		transformRecord("add", "body", "headers", "querystring"),
		transformRecord("append", "body", "headers", "querystring"),
	}})
	registerPlugin(&PluginSchema{Name: "response-transformer", Priority: 800, Config: []*Field{
		transformRecord("remove", "json", "headers"),
		transformRecord("rename", "headers", "json"),
		transformRecord("replace", "json", "headers", "json_types"),
		transformRecord("add", "json", "headers", "json_types"),
		transformRecord("append", "json", "headers", "json_types"),
	}})
	registerPlugin(&PluginSchema{Name: "ip-restriction", Priority: 990, Config: []*Field{
		{Name: "allow", Type: Array, Elem: &Field{Type: String, Check: CheckIPOrCIDR}},
		{Name: "deny", Type: Array, Elem: &Field{Type: String, Check: CheckIPOrCIDR}},
		{Name: "status", Type: Number},
		{Name: "message", Type: String},
	},
		Protocols:    Strs("http", "https", "tcp", "tls", "grpc", "grpcs"),
		Checks:       []EntityCheck{AtLeastOneOf("config.allow", "config.deny")},
		EntityChecks: []any{map[string]any{"at_least_one_of": Strs("config.allow", "config.deny")}},
	})
	registerPlugin(&PluginSchema{Name: "correlation-id", Priority: 100001, Config: []*Field{
		{Name: "header_name", Type: String, Default: "Kong-Request-ID"},
		{Name: "generator", Type: String, Default: "uuid#counter", Required: true, OneOf: Strs("uuid", "uuid#counter", "tracker")},
		BoolField("echo_downstream", false),
	}})
	registerPlugin(&PluginSchema{Name: "request-termination", Priority: 2, Config: []*Field{
		{Name: "status_code", Type: Integer, Default: 503, Required: true, Between: Between(100, 599)},
		{Name: "message", Type: String},
		{Name: "content_type", Type: String},
		{Name: "body", Type: String},
		BoolField("echo", false),
		{Name: "trigger", Type: String},
	}, Checks: []EntityCheck{checkRequestTermination}})
	// redirect (Kong 3.9 and later, kong/plugins/redirect/schema.lua): KIC's rendering of an
	// HTTPRoute RequestRedirect on those versions.
	registerPlugin(&PluginSchema{Name: "redirect", Priority: 779, Config: []*Field{
		{Name: "status_code", Type: Integer, Default: 301, Required: true, Between: Between(100, 599)},
		{Name: "location", Type: String, Required: true, Check: CheckURL},
		BoolField("keep_incoming_path", false),
	}})
	registerPlugin(&PluginSchema{Name: "prometheus", Priority: 13, Config: []*Field{
		BoolField("per_consumer", false),
		BoolField("status_code_metrics", false),
		BoolField("ai_metrics", false),
		BoolField("latency_metrics", false),
		BoolField("bandwidth_metrics", false),
		BoolField("upstream_health_metrics", false),
	}})
}

// checkCORSOrigin: an origin is "*" or a regex PCRE compiles.
func checkCORSOrigin(v any) any {
	s := v.(string)
	if s == "*" || PCRE(s) == "" {
		return ""
	}
	return "'" + s + "' is not a valid regex"
}

func checkRateLimitOrder(e map[string]any) ([]string, map[string]any) {
	order := []string{"second", "minute", "hour", "day", "month", "year"}
	cfg, _ := e["config"].(map[string]any)
	var prevName string
	var prev float64
	have := false
	for _, n := range order {
		v, ok := ToFloat(cfg[n])
		if !ok {
			continue
		}
		if have && v < prev {
			return nil, ErrTree{"config": ErrTree{n: "The limit for " + n + "(" + Fnum(v) +
				") cannot be lower than the limit for " + prevName + "(" + Fnum(prev) + ")"}}
		}
		prevName, prev, have = n, v, true
	}
	return nil, nil
}

func checkRequestTermination(e map[string]any) ([]string, map[string]any) {
	cfg, _ := e["config"].(map[string]any)
	if cfg["message"] != nil && cfg["body"] != nil {
		return []string{"message cannot be used with content_type or body"}, nil
	}
	if cfg["message"] != nil && cfg["content_type"] != nil {
		return []string{"message cannot be used with content_type or body"}, nil
	}
	return nil, nil
}

func checkRateLimitPolicy(e map[string]any) ([]string, map[string]any) {
	cfg, _ := e["config"].(map[string]any)
	errs := ErrTree{}
	if cfg["policy"] == "redis" {
		redis, _ := cfg["redis"].(map[string]any)
		if redis["host"] == nil {
			errs["redis"] = ErrTree{"host": "required field missing"}
		}
		if redis["port"] == nil {
			errs["redis"] = ErrTree{"port": "required field missing"}
		}
	}
	if cfg["limit_by"] == "header" && cfg["header_name"] == nil {
		errs["header_name"] = "required field missing"
	}
	if cfg["limit_by"] == "path" && cfg["path"] == nil {
		errs["path"] = "required field missing"
	}
	if len(errs) == 0 {
		return nil, nil
	}
	return nil, ErrTree{"config": errs}
}
