package kongemu

import (
	"github.com/konductor/konductor/internal/kongrules"
)

// schema describes an entity type.
type schema struct {
	Name        string // collection/DAO name as used in declarative config: "services", "keyauth_credentials"
	Path        string // Admin API collection path: "services", "key-auths"
	Singular    string // flattened_errors entity_type
	Fields      []*field
	EndpointKey string   // field looked up by a non-UUID path segment
	CacheKey    []string // composite unique key (plugins, targets, acls)
	Checks      []entityCheck
	// entityChecks is the Kong form of the checks for /schemas output.
	EntityChecks []any
	// Credential: nested under consumers at this path segment.
	ConsumerPath string
	// Updated: has updated_at.
	Updated bool
	// Gate, when set, tells which Kongs have the entity (consumer groups: Enterprise).
	Gate func(profile) bool
	// NoAPI: no Admin API collection of its own (consumer group memberships).
	NoAPI bool
}

func (s *schema) field(name string) *field {
	for _, f := range s.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// foreignFields lists the foreign keys of s (of every profile when p is nil).
func (s *schema) foreignFields(p *profile) []*field {
	fs := s.Fields
	if p != nil {
		fs = s.fieldsFor(*p)
	}
	var out []*field
	for _, f := range fs {
		if f.Type == kongrules.Foreign {
			out = append(out, f)
		}
	}
	return out
}

func idField() *field { return &field{Name: "id", Type: kongrules.String, UUID: true, Auto: true} }
func createdAt() *field {
	return &field{Name: "created_at", Type: kongrules.Integer, Auto: true}
}
func updatedAt() *field {
	return &field{Name: "updated_at", Type: kongrules.Integer, Auto: true}
}
func tagsField() *field {
	return &field{Name: "tags", Type: kongrules.Set, Elem: &field{Type: kongrules.String, Check: checkTag}}
}
func foreign(name, ref string, required bool, onDelete string) *field {
	return &field{Name: name, Type: kongrules.Foreign, Ref: ref, Required: required, OnDelete: onDelete}
}

var protocolsAll = kongrules.Strs("grpc", "grpcs", "http", "https", "tcp", "tls", "tls_passthrough", "udp", "ws", "wss")

// schemas is the table of every entity the emulator knows, by collection name.
var schemas = map[string]*schema{}

// schemaByPath finds a schema by its Admin API collection path.
var schemaByPath = map[string]*schema{}

// order in which entities are loaded and listed in declarative config.
var entityOrder = []string{
	"vaults", "certificates", "ca_certificates", "snis", "consumers", "consumer_groups",
	"consumer_group_consumers", "services", "upstreams", "routes", "targets", "plugins",
	"keyauth_credentials", "basicauth_credentials", "hmacauth_credentials",
	"jwt_secrets", "acls", "oauth2_credentials", "mtls_auth_credentials",
}

func register(s *schema) {
	if s.Path == "" {
		s.Path = s.Name
	}
	schemas[s.Name] = s
	schemaByPath[s.Path] = s
}

func init() {
	register(&schema{
		Name: "services", Singular: "service", EndpointKey: "name", Updated: true,
		Fields: []*field{
			idField(), createdAt(), updatedAt(),
			{Name: "name", Type: kongrules.String, Unique: true, Check: checkName},
			{Name: "retries", Type: kongrules.Integer, Default: 5, Between: kongrules.Between(0, 32767)},
			{Name: "protocol", Type: kongrules.String, Default: "http", Required: true,
				OneOf: kongrules.Strs("grpc", "grpcs", "http", "https", "tcp", "tls", "tls_passthrough", "udp", "ws", "wss")},
			{Name: "host", Type: kongrules.String, Required: true, Check: checkHost},
			{Name: "port", Type: kongrules.Integer, Default: 80, Required: true, Between: kongrules.Between(0, 65535)},
			{Name: "path", Type: kongrules.String, Check: kongrules.CheckServicePath},
			{Name: "connect_timeout", Type: kongrules.Integer, Default: 60000, Between: kongrules.Between(1, 2147483646)},
			{Name: "write_timeout", Type: kongrules.Integer, Default: 60000, Between: kongrules.Between(1, 2147483646)},
			{Name: "read_timeout", Type: kongrules.Integer, Default: 60000, Between: kongrules.Between(1, 2147483646)},
			tagsField(),
			foreign("client_certificate", "certificates", false, ""),
			{Name: "tls_verify", Type: kongrules.Boolean},
			{Name: "tls_verify_depth", Type: kongrules.Integer, Between: kongrules.Between(0, 64)},
			{Name: "ca_certificates", Type: kongrules.Array, Elem: &field{Type: kongrules.String, UUID: true}},
			{Name: "enabled", Type: kongrules.Boolean, Default: true, Required: true},
		},
		Checks: []entityCheck{checkService},
	})
	register(&schema{
		Name: "routes", Singular: "route", EndpointKey: "name", Updated: true,
		Fields: []*field{
			idField(), createdAt(), updatedAt(),
			{Name: "name", Type: kongrules.String, Unique: true, Check: checkName},
			{Name: "protocols", Type: kongrules.Set, Required: true, Default: kongrules.Strs("http", "https"),
				Elem: &field{Type: kongrules.String, OneOf: protocolsAll}, Check: checkProtocolMix},
			{Name: "methods", Type: kongrules.Set, Elem: &field{Type: kongrules.String, Check: kongrules.CheckMethod}},
			{Name: "hosts", Type: kongrules.Array, Elem: &field{Type: kongrules.String, Check: checkRouteHost}},
			{Name: "paths", Type: kongrules.Array, Elem: &field{Type: kongrules.String, Check: checkRoutePath}},
			{Name: "headers", Type: kongrules.Map, Key: &field{Type: kongrules.String},
				Elem: &field{Type: kongrules.Array, Elem: &field{Type: kongrules.String}}, Check: checkRouteHeaders},
			{Name: "https_redirect_status_code", Type: kongrules.Integer, Default: 426, Required: true,
				OneOf: kongrules.Ints(426, 301, 302, 307, 308)},
			{Name: "regex_priority", Type: kongrules.Integer, Default: 0},
			{Name: "strip_path", Type: kongrules.Boolean, Default: true, Required: true},
			{Name: "path_handling", Type: kongrules.String, Default: "v0", OneOf: kongrules.Strs("v0", "v1")},
			{Name: "preserve_host", Type: kongrules.Boolean, Default: false, Required: true},
			{Name: "request_buffering", Type: kongrules.Boolean, Default: true, Required: true},
			{Name: "response_buffering", Type: kongrules.Boolean, Default: true, Required: true},
			{Name: "snis", Type: kongrules.Set, Elem: &field{Type: kongrules.String, Check: checkSNIName}},
			{Name: "sources", Type: kongrules.Set, Elem: &field{Type: kongrules.Record, Fields: []*field{
				{Name: "ip", Type: kongrules.String, Check: kongrules.CheckIPOrCIDR},
				{Name: "port", Type: kongrules.Integer, Between: kongrules.Between(0, 65535)},
			}}},
			{Name: "destinations", Type: kongrules.Set, Elem: &field{Type: kongrules.Record, Fields: []*field{
				{Name: "ip", Type: kongrules.String, Check: kongrules.CheckIPOrCIDR},
				{Name: "port", Type: kongrules.Integer, Between: kongrules.Between(0, 65535)},
			}}},
			tagsField(),
			foreign("service", "services", false, ""),
			gated(&field{Name: "expression", Type: kongrules.String}, expressionsOnly),
			gated(&field{Name: "priority", Type: kongrules.Integer, Required: true, Default: 0,
				Between: kongrules.Between(0, 1<<46-1)}, expressionsOnly),
		},
		Checks: []entityCheck{checkRoute},
	})
	register(&schema{
		Name: "upstreams", Singular: "upstream", EndpointKey: "name", Updated: true,
		Fields: []*field{
			idField(), createdAt(), updatedAt(),
			{Name: "name", Type: kongrules.String, Required: true, Unique: true, Check: checkUpstreamName},
			gated(&field{Name: "algorithm", Type: kongrules.String, Default: "round-robin",
				OneOf: kongrules.Strs("consistent-hashing", "least-connections", "round-robin", "latency")}, before(3, 11)),
			gated(&field{Name: "algorithm", Type: kongrules.String, Default: "round-robin",
				OneOf: kongrules.Strs("consistent-hashing", "least-connections", "round-robin", "latency", "sticky-sessions")},
				since(3, 11)),
			{Name: "hash_on", Type: kongrules.String, Default: "none", OneOf: hashOn},
			{Name: "hash_fallback", Type: kongrules.String, Default: "none", OneOf: hashOn},
			{Name: "hash_on_header", Type: kongrules.String, Check: kongrules.CheckHeaderName},
			{Name: "hash_fallback_header", Type: kongrules.String, Check: kongrules.CheckHeaderName},
			{Name: "hash_on_cookie", Type: kongrules.String, Check: checkCookieName},
			{Name: "hash_on_cookie_path", Type: kongrules.String, Default: "/", Check: kongrules.CheckServicePath},
			{Name: "hash_on_query_arg", Type: kongrules.String, LenMin: 1},
			{Name: "hash_fallback_query_arg", Type: kongrules.String, LenMin: 1},
			{Name: "hash_on_uri_capture", Type: kongrules.String, LenMin: 1},
			{Name: "hash_fallback_uri_capture", Type: kongrules.String, LenMin: 1},
			{Name: "slots", Type: kongrules.Integer, Default: 10000, Between: kongrules.Between(10, 65536)},
			healthchecksField(),
			tagsField(),
			{Name: "host_header", Type: kongrules.String, Check: checkHost},
			foreign("client_certificate", "certificates", false, ""),
			{Name: "use_srv_name", Type: kongrules.Boolean, Default: false},
			gated(&field{Name: "sticky_sessions_cookie", Type: kongrules.String, Check: checkCookieName}, since(3, 11)),
			gated(&field{Name: "sticky_sessions_cookie_path", Type: kongrules.String, Default: "/",
				Check: kongrules.CheckServicePath}, since(3, 11)),
		},
		Checks: []entityCheck{checkUpstream},
	})
	register(&schema{
		Name: "targets", Singular: "target", EndpointKey: "target", Updated: true,
		CacheKey: []string{"upstream", "target"},
		Fields: []*field{
			idField(), createdAt(), updatedAt(),
			foreign("upstream", "upstreams", true, "cascade"),
			{Name: "target", Type: kongrules.String, Required: true, Check: checkTarget},
			{Name: "weight", Type: kongrules.Integer, Default: 100, Between: kongrules.Between(0, 65535)},
			tagsField(),
		},
	})
	register(&schema{
		Name: "plugins", Singular: "plugin", EndpointKey: "instance_name", Updated: true,
		CacheKey: []string{"name", "route", "service", "consumer", "consumer_group"},
		Fields: []*field{
			idField(),
			{Name: "name", Type: kongrules.String, Required: true},
			{Name: "instance_name", Type: kongrules.String, Unique: true, Check: checkName},
			createdAt(), updatedAt(),
			foreign("route", "routes", false, "cascade"),
			foreign("service", "services", false, "cascade"),
			foreign("consumer", "consumers", false, "cascade"),
			gated(foreign("consumer_group", "consumer_groups", false, "cascade"), enterpriseOnly),
			{Name: "config", Type: kongrules.Record},
			{Name: "protocols", Type: kongrules.Set, Required: true, Default: kongrules.Strs("grpc", "grpcs", "http", "https"),
				Elem: &field{Type: kongrules.String, OneOf: protocolsAll}},
			{Name: "enabled", Type: kongrules.Boolean, Default: true, Required: true},
			tagsField(),
			{Name: "ordering", Type: kongrules.JSON},
		},
		Checks: []entityCheck{kongrules.MutuallyExclusive("consumer", "consumer_group")},
	})
	register(&schema{
		Name: "consumers", Singular: "consumer", EndpointKey: "username", Updated: true,
		Fields: []*field{
			idField(), createdAt(), updatedAt(),
			{Name: "username", Type: kongrules.String, Unique: true},
			{Name: "custom_id", Type: kongrules.String, Unique: true},
			tagsField(),
		},
		Checks:       []entityCheck{kongrules.AtLeastOneOf("custom_id", "username")},
		EntityChecks: []any{map[string]any{"at_least_one_of": kongrules.Strs("custom_id", "username")}},
	})
	register(&schema{
		Name: "certificates", Singular: "certificate", EndpointKey: "id", Updated: true,
		Fields: []*field{
			idField(), createdAt(), updatedAt(),
			{Name: "cert", Type: kongrules.String, Required: true, Check: checkCertPEM},
			{Name: "key", Type: kongrules.String, Required: true, Check: checkKeyPEM},
			{Name: "cert_alt", Type: kongrules.String, Check: checkCertPEM},
			{Name: "key_alt", Type: kongrules.String, Check: checkKeyPEM},
			tagsField(),
			{Name: "snis", Type: kongrules.Array, Transient: true, Elem: &field{Type: kongrules.String, Check: checkSNIName}},
		},
		Checks: []entityCheck{checkCertificate},
	})
	register(&schema{
		Name: "snis", Singular: "sni", EndpointKey: "name", Updated: true,
		Fields: []*field{
			idField(),
			{Name: "name", Type: kongrules.String, Required: true, Unique: true, Check: checkSNIName},
			createdAt(), updatedAt(),
			tagsField(),
			foreign("certificate", "certificates", true, "cascade"),
		},
	})
	register(&schema{
		Name: "ca_certificates", Singular: "ca_certificate", Updated: true,
		Fields: []*field{
			idField(), createdAt(), updatedAt(),
			{Name: "cert", Type: kongrules.String, Required: true, Check: checkCACertPEM},
			{Name: "cert_digest", Type: kongrules.String, Unique: true},
			tagsField(),
		},
	})
	register(&schema{
		Name: "keyauth_credentials", Path: "key-auths", ConsumerPath: "key-auth", Singular: "keyauth_credential",
		EndpointKey: "key",
		Fields: []*field{
			idField(), createdAt(),
			foreign("consumer", "consumers", true, "cascade"),
			{Name: "key", Type: kongrules.String, Unique: true, Auto: true},
			{Name: "ttl", Type: kongrules.Integer},
			tagsField(),
		},
	})
	register(&schema{
		Name: "basicauth_credentials", Path: "basic-auths", ConsumerPath: "basic-auth", Singular: "basicauth_credential",
		EndpointKey: "username",
		Fields: []*field{
			idField(), createdAt(),
			foreign("consumer", "consumers", true, "cascade"),
			{Name: "username", Type: kongrules.String, Required: true, Unique: true},
			{Name: "password", Type: kongrules.String, Required: true},
			tagsField(),
		},
	})
	register(&schema{
		Name: "hmacauth_credentials", Path: "hmac-auths", ConsumerPath: "hmac-auth", Singular: "hmacauth_credential",
		EndpointKey: "username",
		Fields: []*field{
			idField(), createdAt(),
			foreign("consumer", "consumers", true, "cascade"),
			{Name: "username", Type: kongrules.String, Required: true, Unique: true},
			{Name: "secret", Type: kongrules.String, Auto: true},
			tagsField(),
		},
	})
	register(&schema{
		Name: "jwt_secrets", Path: "jwts", ConsumerPath: "jwt", Singular: "jwt_secret",
		EndpointKey: "key",
		Fields: []*field{
			idField(), createdAt(),
			foreign("consumer", "consumers", true, "cascade"),
			{Name: "key", Type: kongrules.String, Unique: true, Auto: true},
			{Name: "secret", Type: kongrules.String, Auto: true},
			{Name: "rsa_public_key", Type: kongrules.String},
			{Name: "algorithm", Type: kongrules.String, Default: "HS256",
				OneOf: kongrules.Strs("HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "EdDSA")},
			tagsField(),
		},
		Checks: []entityCheck{checkJWTSecret},
	})
	register(&schema{
		Name: "acls", Path: "acls", ConsumerPath: "acls", Singular: "acl",
		CacheKey: []string{"consumer", "group"},
		Fields: []*field{
			idField(), createdAt(),
			foreign("consumer", "consumers", true, "cascade"),
			{Name: "group", Type: kongrules.String, Required: true},
			tagsField(),
		},
	})
	register(&schema{
		Name: "oauth2_credentials", Path: "oauth2", ConsumerPath: "oauth2", Singular: "oauth2_credential",
		EndpointKey: "client_id",
		Fields: []*field{
			idField(), createdAt(),
			foreign("consumer", "consumers", true, "cascade"),
			{Name: "name", Type: kongrules.String, Required: true},
			{Name: "client_id", Type: kongrules.String, Unique: true, Auto: true},
			{Name: "client_secret", Type: kongrules.String, Auto: true},
			{Name: "hash_secret", Type: kongrules.Boolean, Default: false, Required: true},
			{Name: "redirect_uris", Type: kongrules.Array, Elem: &field{Type: kongrules.String, Check: kongrules.CheckURL}},
			{Name: "client_type", Type: kongrules.String, Default: "confidential", Required: true,
				OneOf: kongrules.Strs("confidential", "public")},
			tagsField(),
		},
	})
	register(&schema{
		Name: "consumer_groups", Singular: "consumer_group", EndpointKey: "name", Updated: true,
		Gate: enterpriseOnly,
		Fields: []*field{
			idField(), createdAt(), updatedAt(),
			{Name: "name", Type: kongrules.String, Required: true, Unique: true},
			tagsField(),
		},
	})
	register(&schema{
		// Kong's primary key is (consumer_group, consumer); the emulator keys it by a
		// derived id of its own.
		Name: "consumer_group_consumers", Singular: "consumer_group_consumer", Updated: true,
		Gate: enterpriseOnly, NoAPI: true, CacheKey: []string{"consumer_group", "consumer"},
		Fields: []*field{
			idField(), createdAt(), updatedAt(),
			foreign("consumer_group", "consumer_groups", true, "cascade"),
			foreign("consumer", "consumers", true, "cascade"),
		},
	})
	register(&schema{
		Name: "mtls_auth_credentials", Path: "mtls-auths", ConsumerPath: "mtls-auth", Singular: "mtls_auth_credential",
		Gate: enterpriseOnly, CacheKey: []string{"subject_name", "ca_certificate"},
		Fields: []*field{
			idField(), createdAt(),
			foreign("consumer", "consumers", true, "cascade"),
			{Name: "subject_name", Type: kongrules.String, Required: true},
			foreign("ca_certificate", "ca_certificates", false, ""),
			tagsField(),
		},
	})
	register(&schema{
		Name: "vaults", Singular: "vault", EndpointKey: "prefix", Updated: true,
		Fields: []*field{
			idField(),
			{Name: "prefix", Type: kongrules.String, Required: true, Unique: true, Check: checkVaultPrefix},
			{Name: "name", Type: kongrules.String, Required: true},
			{Name: "description", Type: kongrules.String},
			{Name: "config", Type: kongrules.Record},
			createdAt(), updatedAt(),
			tagsField(),
		},
	})
}

var hashOn = kongrules.Strs("none", "consumer", "ip", "header", "cookie", "path", "query_arg", "uri_capture")

func healthchecksField() *field {
	httpStatuses := func(def []any) *field {
		return &field{Name: "http_statuses", Type: kongrules.Array, Default: def,
			Elem: &field{Type: kongrules.Integer, Between: kongrules.Between(100, 999)}}
	}
	counter := func(name string, max float64) *field {
		return &field{Name: name, Type: kongrules.Integer, Default: 0, Between: kongrules.Between(0, max)}
	}
	return &field{Name: "healthchecks", Type: kongrules.Record, Default: map[string]any{}, Fields: []*field{
		{Name: "active", Type: kongrules.Record, Default: map[string]any{}, Fields: []*field{
			{Name: "type", Type: kongrules.String, Default: "http", OneOf: kongrules.Strs("tcp", "http", "https", "grpc", "grpcs")},
			{Name: "timeout", Type: kongrules.Number, Default: 1, Between: kongrules.Between(0, 65535)},
			{Name: "concurrency", Type: kongrules.Integer, Default: 10, Between: kongrules.Between(1, 2147483648)},
			{Name: "http_path", Type: kongrules.String, Default: "/", Check: kongrules.CheckServicePath},
			{Name: "https_verify_certificate", Type: kongrules.Boolean, Default: true},
			{Name: "https_sni", Type: kongrules.String},
			{Name: "headers", Type: kongrules.Map, Key: &field{Type: kongrules.String}, Elem: &field{Type: kongrules.Array, Elem: &field{Type: kongrules.String}}},
			{Name: "healthy", Type: kongrules.Record, Default: map[string]any{}, Fields: []*field{
				{Name: "interval", Type: kongrules.Number, Default: 0, Between: kongrules.Between(0, 65535)},
				httpStatuses(kongrules.Ints(200, 302)),
				counter("successes", 255),
			}},
			{Name: "unhealthy", Type: kongrules.Record, Default: map[string]any{}, Fields: []*field{
				{Name: "interval", Type: kongrules.Number, Default: 0, Between: kongrules.Between(0, 65535)},
				httpStatuses(kongrules.Ints(429, 404, 500, 501, 502, 503, 504, 505)),
				counter("tcp_failures", 255),
				counter("timeouts", 255),
				counter("http_failures", 255),
			}},
		}},
		{Name: "passive", Type: kongrules.Record, Default: map[string]any{}, Fields: []*field{
			{Name: "type", Type: kongrules.String, Default: "http", OneOf: kongrules.Strs("tcp", "http", "https", "grpc", "grpcs")},
			{Name: "healthy", Type: kongrules.Record, Default: map[string]any{}, Fields: []*field{
				httpStatuses(kongrules.Ints(200, 201, 202, 203, 204, 205, 206, 207, 208, 226, 300, 301, 302, 303, 304, 305, 306, 307, 308)),
				counter("successes", 255),
			}},
			{Name: "unhealthy", Type: kongrules.Record, Default: map[string]any{}, Fields: []*field{
				httpStatuses(kongrules.Ints(429, 500, 503)),
				counter("tcp_failures", 255),
				counter("timeouts", 255),
				counter("http_failures", 255),
			}},
		}},
		{Name: "threshold", Type: kongrules.Number, Default: 0, Between: kongrules.Between(0, 100)},
	}}
}

func (s *schema) JSON(p profile) map[string]any {
	out := map[string]any{"fields": kongrules.FieldsJSON(s.fieldsFor(p))}
	if s.EntityChecks != nil {
		out["entity_checks"] = s.EntityChecks
	} else {
		out["entity_checks"] = []any{}
	}
	if s.EndpointKey != "" && s.EndpointKey != "id" {
		out["endpoint_key"] = s.EndpointKey
	}
	if s.CacheKey != nil {
		out["cache_key"] = kongrules.Strs(s.CacheKey...)
	}
	return out
}
