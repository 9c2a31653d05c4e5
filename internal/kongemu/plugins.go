package kongemu

// pluginSchema is the part of a plugin's schema that differs between plugins.
type pluginSchema struct {
	Name     string
	Version  string
	Priority int
	Config   []*field
	Checks   []entityCheck
	// EntityChecks is the /schemas form of Checks.
	EntityChecks []any
	// Protocols is the default of the plugin's protocols field.
	Protocols []any
	// Shorthands maps deprecated config fields to "record.field".
	Shorthands map[string]string
}

func gt0() *float64 { z := 0.0; return &z }

func numGT0(name string) *field { return &field{Name: name, Type: tNum, GT: gt0()} }

func strArrayReq(name string, def []any) *field {
	f := strArray(name, def)
	f.Required = true
	return f
}

func transformRecord(name string, fields ...string) *field {
	r := &field{Name: name, Type: tRecord, Required: true, Default: map[string]any{}}
	for _, f := range fields {
		if f == "uri" {
			r.Fields = append(r.Fields, &field{Name: "uri", Type: tString})
			continue
		}
		r.Fields = append(r.Fields, strArrayReq(f, []any{}))
	}
	return r
}

var pluginSchemas = map[string]*pluginSchema{}

func registerPlugin(p *pluginSchema) {
	if p.Protocols == nil {
		p.Protocols = strs("grpc", "grpcs", "http", "https")
	}
	if p.Version == "" {
		p.Version = "3.10.0"
	}
	pluginSchemas[p.Name] = p
}

func init() {
	registerPlugin(&pluginSchema{Name: "key-auth", Priority: 1250, Config: []*field{
		strArrayReq("key_names", strs("apikey")),
		boolField("hide_credentials", false),
		{Name: "anonymous", Type: tString},
		boolField("key_in_header", true),
		boolField("key_in_query", true),
		boolField("key_in_body", false),
		boolField("run_on_preflight", true),
		{Name: "realm", Type: tString},
	}})
	registerPlugin(&pluginSchema{Name: "basic-auth", Priority: 1100, Config: []*field{
		{Name: "anonymous", Type: tString},
		boolField("hide_credentials", false),
		{Name: "realm", Type: tString, Default: "service", Required: true},
	}})
	registerPlugin(&pluginSchema{Name: "acl", Priority: 950, Config: []*field{
		strArray("allow", nil),
		strArray("deny", nil),
		boolField("hide_groups_header", false),
		boolField("include_consumer_groups", false),
		boolField("always_use_authenticated_groups", false),
	},
		Checks: []entityCheck{onlyOneOf("config.allow", "config.deny"), atLeastOneOf("config.allow", "config.deny")},
		EntityChecks: []any{
			map[string]any{"only_one_of": strs("config.allow", "config.deny")},
			map[string]any{"at_least_one_of": strs("config.allow", "config.deny")},
		}})
	registerPlugin(&pluginSchema{Name: "jwt", Priority: 1450, Config: []*field{
		{Name: "uri_param_names", Type: tSet, Default: strs("jwt"), Elem: &field{Type: tString}},
		{Name: "cookie_names", Type: tSet, Default: []any{}, Elem: &field{Type: tString}},
		{Name: "key_claim_name", Type: tString, Default: "iss"},
		boolField("secret_is_base64", false),
		{Name: "claims_to_verify", Type: tSet, Elem: &field{Type: tString, OneOf: strs("exp", "nbf")}},
		{Name: "anonymous", Type: tString},
		boolField("run_on_preflight", true),
		{Name: "maximum_expiration", Type: tNum, Default: 0, Between: between(0, 31536000)},
		{Name: "header_names", Type: tSet, Default: strs("authorization"), Elem: &field{Type: tString}},
		{Name: "realm", Type: tString},
	}})
	registerPlugin(&pluginSchema{Name: "cors", Priority: 2000, Config: []*field{
		strArray("origins", nil),
		strArray("headers", nil),
		strArray("exposed_headers", nil),
		{Name: "methods", Type: tArray, Default: strs("GET", "HEAD", "PUT", "PATCH", "POST", "DELETE", "OPTIONS", "TRACE", "CONNECT"),
			Elem: &field{Type: tString, OneOf: strs("GET", "HEAD", "PUT", "PATCH", "POST", "DELETE", "OPTIONS", "TRACE", "CONNECT")}},
		{Name: "max_age", Type: tNum},
		boolField("credentials", false),
		boolField("private_network", false),
		boolField("preflight_continue", false),
		boolField("allow_origin_absent", true),
	}})
	registerPlugin(&pluginSchema{Name: "rate-limiting", Priority: 910, Config: []*field{
		numGT0("second"), numGT0("minute"), numGT0("hour"), numGT0("day"), numGT0("month"), numGT0("year"),
		{Name: "limit_by", Type: tString, Default: "consumer",
			OneOf: strs("consumer", "credential", "ip", "service", "header", "path", "consumer-group")},
		{Name: "header_name", Type: tString},
		{Name: "path", Type: tString, Check: checkServicePath},
		{Name: "policy", Type: tString, Default: "local", OneOf: strs("local", "cluster", "redis")},
		boolField("fault_tolerant", true),
		{Name: "redis", Type: tRecord, Required: true, Default: map[string]any{}, Fields: []*field{
			{Name: "host", Type: tString},
			{Name: "port", Type: tInt, Default: 6379, Between: between(0, 65535)},
			{Name: "timeout", Type: tInt, Default: 2000, Between: between(0, 2147483646)},
			{Name: "connect_timeout", Type: tInt, Default: 2000, Between: between(0, 2147483646)},
			{Name: "send_timeout", Type: tInt, Default: 2000, Between: between(0, 2147483646)},
			{Name: "read_timeout", Type: tInt, Default: 2000, Between: between(0, 2147483646)},
			{Name: "username", Type: tString},
			{Name: "password", Type: tString},
			{Name: "database", Type: tInt, Default: 0},
			boolField("ssl", false),
			boolField("ssl_verify", false),
			{Name: "server_name", Type: tString},
		}},
		boolField("hide_client_headers", false),
		{Name: "error_code", Type: tNum, Default: 429, GT: gt0()},
		{Name: "error_message", Type: tString, Default: "API rate limit exceeded"},
		{Name: "sync_rate", Type: tNum, Default: -1},
	},
		Shorthands: map[string]string{
			"redis_host": "redis.host", "redis_port": "redis.port", "redis_password": "redis.password",
			"redis_username": "redis.username", "redis_ssl": "redis.ssl", "redis_ssl_verify": "redis.ssl_verify",
			"redis_server_name": "redis.server_name", "redis_timeout": "redis.timeout", "redis_database": "redis.database",
		},
		Checks: []entityCheck{
			atLeastOneOf("config.second", "config.minute", "config.hour", "config.day", "config.month", "config.year"),
			checkRateLimitOrder,
			checkRateLimitPolicy,
		},
		EntityChecks: []any{map[string]any{"at_least_one_of": strs("config.second", "config.minute", "config.hour", "config.day", "config.month", "config.year")}},
	})
	registerPlugin(&pluginSchema{Name: "request-transformer", Priority: 801, Config: []*field{
		{Name: "http_method", Type: tString, Check: checkMethod},
		transformRecord("remove", "body", "headers", "querystring"),
		transformRecord("rename", "body", "headers", "querystring"),
		transformRecord("replace", "body", "headers", "querystring", "uri"),
		transformRecord("add", "body", "headers", "querystring"),
		transformRecord("append", "body", "headers", "querystring"),
	}})
	registerPlugin(&pluginSchema{Name: "response-transformer", Priority: 800, Config: []*field{
		transformRecord("remove", "json", "headers"),
		transformRecord("rename", "headers", "json"),
		transformRecord("replace", "json", "headers", "json_types"),
		transformRecord("add", "json", "headers", "json_types"),
		transformRecord("append", "json", "headers", "json_types"),
	}})
	registerPlugin(&pluginSchema{Name: "ip-restriction", Priority: 990, Config: []*field{
		{Name: "allow", Type: tArray, Elem: &field{Type: tString, Check: checkIPOrCIDR}},
		{Name: "deny", Type: tArray, Elem: &field{Type: tString, Check: checkIPOrCIDR}},
		{Name: "status", Type: tNum},
		{Name: "message", Type: tString},
	},
		Protocols:    strs("http", "https", "tcp", "tls", "grpc", "grpcs"),
		Checks:       []entityCheck{atLeastOneOf("config.allow", "config.deny")},
		EntityChecks: []any{map[string]any{"at_least_one_of": strs("config.allow", "config.deny")}},
	})
	registerPlugin(&pluginSchema{Name: "correlation-id", Priority: 100001, Config: []*field{
		{Name: "header_name", Type: tString, Default: "Kong-Request-ID"},
		{Name: "generator", Type: tString, Default: "uuid#counter", Required: true, OneOf: strs("uuid", "uuid#counter", "tracker")},
		boolField("echo_downstream", false),
	}})
	registerPlugin(&pluginSchema{Name: "request-termination", Priority: 2, Config: []*field{
		{Name: "status_code", Type: tInt, Default: 503, Required: true, Between: between(100, 599)},
		{Name: "message", Type: tString},
		{Name: "content_type", Type: tString},
		{Name: "body", Type: tString},
		boolField("echo", false),
		{Name: "trigger", Type: tString},
	}, Checks: []entityCheck{checkRequestTermination}})
	registerPlugin(&pluginSchema{Name: "prometheus", Priority: 13, Config: []*field{
		boolField("per_consumer", false),
		boolField("status_code_metrics", false),
		boolField("ai_metrics", false),
		boolField("latency_metrics", false),
		boolField("bandwidth_metrics", false),
		boolField("upstream_health_metrics", false),
	}})
}

func checkRateLimitOrder(e map[string]any) ([]string, map[string]any) {
	order := []string{"second", "minute", "hour", "day", "month", "year"}
	cfg, _ := e["config"].(map[string]any)
	var prevName string
	var prev float64
	have := false
	for _, n := range order {
		v, ok := toFloat(cfg[n])
		if !ok {
			continue
		}
		if have && v < prev {
			return nil, errTree{"config": errTree{n: "The limit for " + n + "(" + fnum(v) +
				") cannot be lower than the limit for " + prevName + "(" + fnum(prev) + ")"}}
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

// pluginFields returns the fields of the plugins entity with config (and
// protocols' default) specific to the named plugin.
func pluginFields(name string) []*field {
	base := schemas["plugins"].Fields
	p := pluginSchemas[name]
	out := make([]*field, len(base))
	for i, f := range base {
		switch {
		case f.Name == "config" && p != nil:
			out[i] = &field{Name: "config", Type: tRecord, Required: true, Fields: p.Config}
		case f.Name == "protocols" && p != nil:
			c := *f
			c.Default = p.Protocols
			c.Elem = &field{Type: tString, OneOf: p.Protocols}
			out[i] = &c
		default:
			out[i] = f
		}
	}
	return out
}

func pluginSchemaJSON(name string) map[string]any {
	p := pluginSchemas[name]
	fs := pluginFields(name)
	var keep []*field
	for _, f := range fs {
		switch f.Name {
		case "consumer", "route", "service", "protocols", "config":
			keep = append(keep, f)
		}
	}
	out := map[string]any{"fields": fieldsJSON(keep)}
	if p.EntityChecks != nil {
		out["entity_checks"] = p.EntityChecks
	} else {
		out["entity_checks"] = []any{}
	}
	return out
}

func checkRateLimitPolicy(e map[string]any) ([]string, map[string]any) {
	cfg, _ := e["config"].(map[string]any)
	errs := errTree{}
	if cfg["policy"] == "redis" {
		redis, _ := cfg["redis"].(map[string]any)
		if redis["host"] == nil {
			errs["redis"] = errTree{"host": "required field missing"}
		}
		if redis["port"] == nil {
			errs["redis"] = errTree{"port": "required field missing"}
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
	return nil, errTree{"config": errs}
}
