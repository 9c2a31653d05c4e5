package kongemu

import (
	"sort"
)

// ftype is the type of a schema field, named as Kong names it in /schemas.
type ftype string

const (
	tString  ftype = "string"
	tInt     ftype = "integer"
	tNum     ftype = "number"
	tBool    ftype = "boolean"
	tArray   ftype = "array"
	tSet     ftype = "set"
	tMap     ftype = "map"
	tRecord  ftype = "record"
	tForeign ftype = "foreign"
	tJSON    ftype = "json"
)

// field describes one field of an entity or of a plugin's config record.
type field struct {
	Name     string
	Type     ftype
	Default  any // nil: no default
	Required bool
	Auto     bool // id (uuid) and timestamps, filled by the emulator
	UUID     bool
	Unique   bool
	Elem     *field   // array, set: element; map: value
	Key      *field   // map key
	Fields   []*field // record
	Ref      string   // foreign: referenced entity (collection name)
	OnDelete string   // foreign: "cascade" or "" (restrict)
	OneOf    []any
	Between  *[2]float64
	GT       *float64
	LenMin   int
	// Check validates a non-null value that passed the type checks; it
	// returns "" or an error message, or an error tree (map) for records.
	Check func(v any) any
	// Transient fields (certificate snis) are accepted on input and not stored.
	Transient bool
}

// entityCheck validates the entity as a whole. It returns a list of
// entity-level messages and a tree of field errors (nil when valid).
type entityCheck func(e map[string]any) (entity []string, fields map[string]any)

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
}

func (s *schema) field(name string) *field {
	for _, f := range s.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

func (s *schema) foreignFields() []*field {
	var out []*field
	for _, f := range s.Fields {
		if f.Type == tForeign {
			out = append(out, f)
		}
	}
	return out
}

func between(a, b float64) *[2]float64 { return &[2]float64{a, b} }

func strs(v ...string) []any {
	out := make([]any, len(v))
	for i, s := range v {
		out[i] = s
	}
	return out
}

func ints(v ...int) []any {
	out := make([]any, len(v))
	for i, s := range v {
		out[i] = s
	}
	return out
}

func idField() *field { return &field{Name: "id", Type: tString, UUID: true, Auto: true} }
func createdAt() *field {
	return &field{Name: "created_at", Type: tInt, Auto: true}
}
func updatedAt() *field {
	return &field{Name: "updated_at", Type: tInt, Auto: true}
}
func tagsField() *field {
	return &field{Name: "tags", Type: tSet, Elem: &field{Type: tString, Check: checkTag}}
}
func strField(name string) *field { return &field{Name: name, Type: tString} }
func strArray(name string, def []any) *field {
	f := &field{Name: name, Type: tArray, Elem: &field{Type: tString}}
	if def != nil {
		f.Default = def
	}
	return f
}
func boolField(name string, def bool) *field {
	return &field{Name: name, Type: tBool, Default: def, Required: true}
}
func foreign(name, ref string, required bool, onDelete string) *field {
	return &field{Name: name, Type: tForeign, Ref: ref, Required: required, OnDelete: onDelete}
}

var protocolsAll = strs("grpc", "grpcs", "http", "https", "tcp", "tls", "tls_passthrough", "udp", "ws", "wss")

// schemas is the table of every entity the emulator knows, by collection name.
var schemas = map[string]*schema{}

// schemaByPath finds a schema by its Admin API collection path.
var schemaByPath = map[string]*schema{}

// order in which entities are loaded and listed in declarative config.
var entityOrder = []string{
	"certificates", "ca_certificates", "snis", "consumers", "services", "upstreams",
	"routes", "targets", "plugins",
	"keyauth_credentials", "basicauth_credentials", "hmacauth_credentials",
	"jwt_secrets", "acls", "oauth2_credentials",
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
			{Name: "name", Type: tString, Unique: true, Check: checkName},
			{Name: "retries", Type: tInt, Default: 5, Between: between(0, 32767)},
			{Name: "protocol", Type: tString, Default: "http", Required: true,
				OneOf: strs("grpc", "grpcs", "http", "https", "tcp", "tls", "tls_passthrough", "udp", "ws", "wss")},
			{Name: "host", Type: tString, Required: true, Check: checkHost},
			{Name: "port", Type: tInt, Default: 80, Required: true, Between: between(0, 65535)},
			{Name: "path", Type: tString, Check: checkServicePath},
			{Name: "connect_timeout", Type: tInt, Default: 60000, Between: between(1, 2147483646)},
			{Name: "write_timeout", Type: tInt, Default: 60000, Between: between(1, 2147483646)},
			{Name: "read_timeout", Type: tInt, Default: 60000, Between: between(1, 2147483646)},
			tagsField(),
			foreign("client_certificate", "certificates", false, ""),
			{Name: "tls_verify", Type: tBool},
			{Name: "tls_verify_depth", Type: tInt, Between: between(0, 64)},
			{Name: "ca_certificates", Type: tArray, Elem: &field{Type: tString, UUID: true}},
			{Name: "enabled", Type: tBool, Default: true, Required: true},
		},
		Checks: []entityCheck{checkService},
	})
	register(&schema{
		Name: "routes", Singular: "route", EndpointKey: "name", Updated: true,
		Fields: []*field{
			idField(), createdAt(), updatedAt(),
			{Name: "name", Type: tString, Unique: true, Check: checkName},
			{Name: "protocols", Type: tSet, Required: true, Default: strs("http", "https"),
				Elem: &field{Type: tString, OneOf: protocolsAll}, Check: checkProtocolMix},
			{Name: "methods", Type: tSet, Elem: &field{Type: tString, Check: checkMethod}},
			{Name: "hosts", Type: tArray, Elem: &field{Type: tString, Check: checkRouteHost}},
			{Name: "paths", Type: tArray, Elem: &field{Type: tString, Check: checkRoutePath}},
			{Name: "headers", Type: tMap, Key: &field{Type: tString},
				Elem: &field{Type: tArray, Elem: &field{Type: tString}}, Check: checkRouteHeaders},
			{Name: "https_redirect_status_code", Type: tInt, Default: 426, Required: true,
				OneOf: ints(426, 301, 302, 307, 308)},
			{Name: "regex_priority", Type: tInt, Default: 0},
			{Name: "strip_path", Type: tBool, Default: true, Required: true},
			{Name: "path_handling", Type: tString, Default: "v0", OneOf: strs("v0", "v1")},
			{Name: "preserve_host", Type: tBool, Default: false, Required: true},
			{Name: "request_buffering", Type: tBool, Default: true, Required: true},
			{Name: "response_buffering", Type: tBool, Default: true, Required: true},
			{Name: "snis", Type: tSet, Elem: &field{Type: tString, Check: checkSNIName}},
			{Name: "sources", Type: tSet, Elem: &field{Type: tRecord, Fields: []*field{
				{Name: "ip", Type: tString, Check: checkIPOrCIDR},
				{Name: "port", Type: tInt, Between: between(0, 65535)},
			}}},
			{Name: "destinations", Type: tSet, Elem: &field{Type: tRecord, Fields: []*field{
				{Name: "ip", Type: tString, Check: checkIPOrCIDR},
				{Name: "port", Type: tInt, Between: between(0, 65535)},
			}}},
			tagsField(),
			foreign("service", "services", false, ""),
		},
		Checks: []entityCheck{checkRoute},
	})
	register(&schema{
		Name: "upstreams", Singular: "upstream", EndpointKey: "name", Updated: true,
		Fields: []*field{
			idField(), createdAt(), updatedAt(),
			{Name: "name", Type: tString, Required: true, Unique: true, Check: checkUpstreamName},
			{Name: "algorithm", Type: tString, Default: "round-robin",
				OneOf: strs("consistent-hashing", "least-connections", "round-robin", "latency")},
			{Name: "hash_on", Type: tString, Default: "none", OneOf: hashOn},
			{Name: "hash_fallback", Type: tString, Default: "none", OneOf: hashOn},
			{Name: "hash_on_header", Type: tString, Check: checkHeaderName},
			{Name: "hash_fallback_header", Type: tString, Check: checkHeaderName},
			{Name: "hash_on_cookie", Type: tString},
			{Name: "hash_on_cookie_path", Type: tString, Default: "/", Check: checkServicePath},
			{Name: "hash_on_query_arg", Type: tString, LenMin: 1},
			{Name: "hash_fallback_query_arg", Type: tString, LenMin: 1},
			{Name: "hash_on_uri_capture", Type: tString, LenMin: 1},
			{Name: "hash_fallback_uri_capture", Type: tString, LenMin: 1},
			{Name: "slots", Type: tInt, Default: 10000, Between: between(10, 65536)},
			healthchecksField(),
			tagsField(),
			{Name: "host_header", Type: tString, Check: checkHost},
			foreign("client_certificate", "certificates", false, ""),
			{Name: "use_srv_name", Type: tBool, Default: false},
		},
		Checks: []entityCheck{checkUpstream},
	})
	register(&schema{
		Name: "targets", Singular: "target", EndpointKey: "target", Updated: true,
		CacheKey: []string{"upstream", "target"},
		Fields: []*field{
			idField(), createdAt(), updatedAt(),
			foreign("upstream", "upstreams", true, "cascade"),
			{Name: "target", Type: tString, Required: true, Check: checkTarget},
			{Name: "weight", Type: tInt, Default: 100, Between: between(0, 65535)},
			tagsField(),
		},
	})
	register(&schema{
		Name: "plugins", Singular: "plugin", EndpointKey: "instance_name", Updated: true,
		CacheKey: []string{"name", "route", "service", "consumer"},
		Fields: []*field{
			idField(),
			{Name: "name", Type: tString, Required: true},
			{Name: "instance_name", Type: tString, Unique: true, Check: checkName},
			createdAt(), updatedAt(),
			foreign("route", "routes", false, "cascade"),
			foreign("service", "services", false, "cascade"),
			foreign("consumer", "consumers", false, "cascade"),
			{Name: "config", Type: tRecord},
			{Name: "protocols", Type: tSet, Required: true, Default: strs("grpc", "grpcs", "http", "https"),
				Elem: &field{Type: tString, OneOf: protocolsAll}},
			{Name: "enabled", Type: tBool, Default: true, Required: true},
			tagsField(),
			{Name: "ordering", Type: tJSON},
		},
	})
	register(&schema{
		Name: "consumers", Singular: "consumer", EndpointKey: "username", Updated: true,
		Fields: []*field{
			idField(), createdAt(), updatedAt(),
			{Name: "username", Type: tString, Unique: true},
			{Name: "custom_id", Type: tString, Unique: true},
			tagsField(),
		},
		Checks:       []entityCheck{atLeastOneOf("custom_id", "username")},
		EntityChecks: []any{map[string]any{"at_least_one_of": strs("custom_id", "username")}},
	})
	register(&schema{
		Name: "certificates", Singular: "certificate", EndpointKey: "id", Updated: true,
		Fields: []*field{
			idField(), createdAt(), updatedAt(),
			{Name: "cert", Type: tString, Required: true, Check: checkCertPEM},
			{Name: "key", Type: tString, Required: true, Check: checkKeyPEM},
			{Name: "cert_alt", Type: tString, Check: checkCertPEM},
			{Name: "key_alt", Type: tString, Check: checkKeyPEM},
			tagsField(),
			{Name: "snis", Type: tArray, Transient: true, Elem: &field{Type: tString, Check: checkSNIName}},
		},
		Checks: []entityCheck{checkCertificate},
	})
	register(&schema{
		Name: "snis", Singular: "sni", EndpointKey: "name", Updated: true,
		Fields: []*field{
			idField(),
			{Name: "name", Type: tString, Required: true, Unique: true, Check: checkSNIName},
			createdAt(), updatedAt(),
			tagsField(),
			foreign("certificate", "certificates", true, "cascade"),
		},
	})
	register(&schema{
		Name: "ca_certificates", Singular: "ca_certificate", Updated: true,
		Fields: []*field{
			idField(), createdAt(), updatedAt(),
			{Name: "cert", Type: tString, Required: true, Check: checkCACertPEM},
			{Name: "cert_digest", Type: tString, Unique: true},
			tagsField(),
		},
	})
	register(&schema{
		Name: "keyauth_credentials", Path: "key-auths", ConsumerPath: "key-auth", Singular: "keyauth_credential",
		EndpointKey: "key",
		Fields: []*field{
			idField(), createdAt(),
			foreign("consumer", "consumers", true, "cascade"),
			{Name: "key", Type: tString, Unique: true, Auto: true},
			{Name: "ttl", Type: tInt},
			tagsField(),
		},
	})
	register(&schema{
		Name: "basicauth_credentials", Path: "basic-auths", ConsumerPath: "basic-auth", Singular: "basicauth_credential",
		EndpointKey: "username",
		Fields: []*field{
			idField(), createdAt(),
			foreign("consumer", "consumers", true, "cascade"),
			{Name: "username", Type: tString, Required: true, Unique: true},
			{Name: "password", Type: tString, Required: true},
			tagsField(),
		},
	})
	register(&schema{
		Name: "hmacauth_credentials", Path: "hmac-auths", ConsumerPath: "hmac-auth", Singular: "hmacauth_credential",
		EndpointKey: "username",
		Fields: []*field{
			idField(), createdAt(),
			foreign("consumer", "consumers", true, "cascade"),
			{Name: "username", Type: tString, Required: true, Unique: true},
			{Name: "secret", Type: tString, Auto: true},
			tagsField(),
		},
	})
	register(&schema{
		Name: "jwt_secrets", Path: "jwts", ConsumerPath: "jwt", Singular: "jwt_secret",
		EndpointKey: "key",
		Fields: []*field{
			idField(), createdAt(),
			foreign("consumer", "consumers", true, "cascade"),
			{Name: "key", Type: tString, Unique: true, Auto: true},
			{Name: "secret", Type: tString, Auto: true},
			{Name: "rsa_public_key", Type: tString},
			{Name: "algorithm", Type: tString, Default: "HS256",
				OneOf: strs("HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "EdDSA")},
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
			{Name: "group", Type: tString, Required: true},
			tagsField(),
		},
	})
	register(&schema{
		Name: "oauth2_credentials", Path: "oauth2", ConsumerPath: "oauth2", Singular: "oauth2_credential",
		EndpointKey: "client_id",
		Fields: []*field{
			idField(), createdAt(),
			foreign("consumer", "consumers", true, "cascade"),
			{Name: "name", Type: tString, Required: true},
			{Name: "client_id", Type: tString, Unique: true, Auto: true},
			{Name: "client_secret", Type: tString, Auto: true},
			{Name: "hash_secret", Type: tBool, Default: false, Required: true},
			{Name: "redirect_uris", Type: tArray, Elem: &field{Type: tString, Check: checkURL}},
			{Name: "client_type", Type: tString, Default: "confidential", Required: true,
				OneOf: strs("confidential", "public")},
			tagsField(),
		},
	})
}

var hashOn = strs("none", "consumer", "ip", "header", "cookie", "path", "query_arg", "uri_capture")

func healthchecksField() *field {
	httpStatuses := func(def []any) *field {
		return &field{Name: "http_statuses", Type: tArray, Default: def,
			Elem: &field{Type: tInt, Between: between(100, 999)}}
	}
	counter := func(name string, max float64) *field {
		return &field{Name: name, Type: tInt, Default: 0, Between: between(0, max)}
	}
	return &field{Name: "healthchecks", Type: tRecord, Default: map[string]any{}, Fields: []*field{
		{Name: "active", Type: tRecord, Default: map[string]any{}, Fields: []*field{
			{Name: "type", Type: tString, Default: "http", OneOf: strs("tcp", "http", "https", "grpc", "grpcs")},
			{Name: "timeout", Type: tNum, Default: 1, Between: between(0, 65535)},
			{Name: "concurrency", Type: tInt, Default: 10, Between: between(1, 2147483648)},
			{Name: "http_path", Type: tString, Default: "/", Check: checkServicePath},
			{Name: "https_verify_certificate", Type: tBool, Default: true},
			{Name: "https_sni", Type: tString},
			{Name: "headers", Type: tMap, Key: &field{Type: tString}, Elem: &field{Type: tArray, Elem: &field{Type: tString}}},
			{Name: "healthy", Type: tRecord, Default: map[string]any{}, Fields: []*field{
				{Name: "interval", Type: tNum, Default: 0, Between: between(0, 65535)},
				httpStatuses(ints(200, 302)),
				counter("successes", 255),
			}},
			{Name: "unhealthy", Type: tRecord, Default: map[string]any{}, Fields: []*field{
				{Name: "interval", Type: tNum, Default: 0, Between: between(0, 65535)},
				httpStatuses(ints(429, 404, 500, 501, 502, 503, 504, 505)),
				counter("tcp_failures", 255),
				counter("timeouts", 255),
				counter("http_failures", 255),
			}},
		}},
		{Name: "passive", Type: tRecord, Default: map[string]any{}, Fields: []*field{
			{Name: "type", Type: tString, Default: "http", OneOf: strs("tcp", "http", "https", "grpc", "grpcs")},
			{Name: "healthy", Type: tRecord, Default: map[string]any{}, Fields: []*field{
				httpStatuses(ints(200, 201, 202, 203, 204, 205, 206, 207, 208, 226, 300, 301, 302, 303, 304, 305, 306, 307, 308)),
				counter("successes", 255),
			}},
			{Name: "unhealthy", Type: tRecord, Default: map[string]any{}, Fields: []*field{
				httpStatuses(ints(429, 500, 503)),
				counter("tcp_failures", 255),
				counter("timeouts", 255),
				counter("http_failures", 255),
			}},
		}},
		{Name: "threshold", Type: tNum, Default: 0, Between: between(0, 100)},
	}}
}

// schemaJSON renders a schema as Kong's /schemas endpoint does.
func fieldsJSON(fs []*field) []any {
	out := make([]any, 0, len(fs))
	for _, f := range fs {
		if f.Transient {
			out = append(out, map[string]any{f.Name: map[string]any{"type": string(f.Type), "transient": true,
				"elements": fieldJSON(f.Elem)}})
			continue
		}
		out = append(out, map[string]any{f.Name: fieldJSON(f)})
	}
	return out
}

func fieldJSON(f *field) map[string]any {
	m := map[string]any{"type": string(f.Type)}
	if f.Type == tForeign {
		m["reference"] = f.Ref
		if f.OnDelete != "" {
			m["on_delete"] = f.OnDelete
		}
	}
	if f.Default != nil {
		m["default"] = deepCopy(f.Default)
	}
	if f.Required {
		m["required"] = true
	}
	if f.Auto {
		m["auto"] = true
	}
	if f.UUID {
		m["uuid"] = true
	}
	if f.Unique {
		m["unique"] = true
	}
	if f.OneOf != nil {
		m["one_of"] = f.OneOf
	}
	if f.Between != nil {
		m["between"] = []any{f.Between[0], f.Between[1]}
	}
	if f.GT != nil {
		m["gt"] = *f.GT
	}
	if f.LenMin > 0 {
		m["len_min"] = f.LenMin
	}
	switch f.Type {
	case tArray, tSet:
		if f.Elem != nil {
			m["elements"] = fieldJSON(f.Elem)
		}
	case tMap:
		if f.Key != nil {
			m["keys"] = fieldJSON(f.Key)
		}
		if f.Elem != nil {
			m["values"] = fieldJSON(f.Elem)
		}
	case tRecord:
		m["fields"] = fieldsJSON(f.Fields)
	}
	return m
}

func (s *schema) JSON() map[string]any {
	out := map[string]any{"fields": fieldsJSON(s.Fields)}
	if s.EntityChecks != nil {
		out["entity_checks"] = s.EntityChecks
	} else {
		out["entity_checks"] = []any{}
	}
	if s.EndpointKey != "" && s.EndpointKey != "id" {
		out["endpoint_key"] = s.EndpointKey
	}
	if s.CacheKey != nil {
		out["cache_key"] = strs(s.CacheKey...)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
