package kongemu

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"

	"github.com/konductor/konductor/internal/kongrules"
)

func hasAny(l any, vals ...string) bool {
	arr, _ := l.([]any)
	for _, x := range arr {
		for _, v := range vals {
			if x == v {
				return true
			}
		}
	}
	return false
}

func checkService(e map[string]any) ([]string, map[string]any) {
	errs := errTree{}
	proto, _ := e["protocol"].(string)
	switch proto {
	case "tcp", "tls", "tls_passthrough", "udp", "grpc", "grpcs":
		if e["path"] != nil {
			errs["path"] = "value must be null"
		}
	}
	switch proto {
	case "https", "tls", "wss", "grpcs":
	default:
		if e["client_certificate"] != nil {
			errs["client_certificate"] = "value must be null"
		}
		if e["tls_verify"] != nil {
			errs["tls_verify"] = "value must be null"
		}
		if e["tls_verify_depth"] != nil {
			errs["tls_verify_depth"] = "value must be null"
		}
		if !kongrules.IsNull(e["ca_certificates"]) {
			errs["ca_certificates"] = "value must be null"
		}
	}
	if len(errs) == 0 {
		return nil, nil
	}
	return nil, errs
}

func checkProtocolMix(v any) any {
	subsets := [][]string{{"http", "https"}, {"tcp", "tls", "udp"}, {"tls_passthrough"}, {"grpc", "grpcs"}, {"ws", "wss"}}
	seen := 0
	for _, s := range subsets {
		if hasAny(v, s...) {
			seen++
		}
	}
	if seen > 1 {
		return "these sets are mutually exclusive: ('http', 'https'), ('tcp', 'tls', 'udp'), ('tls_passthrough'), ('grpc', 'grpcs'), ('ws', 'wss')"
	}
	return ""
}

// routeMatchers are the traditional matching fields of a route.
var routeMatchers = []string{"methods", "hosts", "paths", "headers", "snis", "sources", "destinations"}

// checkRoute is Kong's route entity checks: the snis conditional, the per-protocol
// subschemas (routes_subschemas.lua, not under the expressions router) and, under the
// expressions router, the expression checks. A route validated as an expressions-router
// route carries the "priority" field.
func checkRoute(e map[string]any) ([]string, map[string]any) {
	errs := errTree{}
	var ent []string
	p := e["protocols"]
	if !kongrules.IsNull(e["snis"]) && !hasAny(p, "https", "grpcs", "tls", "tls_passthrough", "wss") {
		errs["snis"] = "'snis' can only be set when 'protocols' is 'grpcs', 'https', 'tls' or 'tls_passthrough'"
	}
	if _, expressions := e["priority"]; expressions {
		if msg := checkExpressionRoute(e); msg != "" {
			ent = append(ent, "Router Expression failed validation: "+msg)
		}
	} else {
		ent = append(ent, routeSubschema(e, errs)...)
	}
	if msg := checkTraditionalRegexes(e); msg != "" && len(ent) == 0 {
		ent = append(ent, "Router Expression failed validation: "+msg)
	}
	if len(errs) == 0 {
		errs = nil
	}
	return ent, errs
}

// routeSubschema applies the subschema of the route's first protocol.
func routeSubschema(e map[string]any, errs errTree) []string {
	set := func(names ...string) bool {
		for _, n := range names {
			if !kongrules.IsNull(e[n]) {
				return true
			}
		}
		return false
	}
	refuse := func(which string, fields ...string) {
		for _, f := range fields {
			if set(f) {
				errs[f] = fmt.Sprintf("cannot set '%s' when 'protocols' is %s", f, which)
			}
		}
	}
	protos, _ := e["protocols"].([]any)
	first := ""
	if len(protos) > 0 {
		first, _ = protos[0].(string)
	}
	p := e["protocols"]
	switch first {
	case "http", "https":
		refuse("'http' or 'https'", "sources", "destinations")
		switch {
		case hasAny(p, "https") && !set("methods", "hosts", "headers", "paths", "snis"):
			return []string{"must set one of 'methods', 'hosts', 'headers', 'paths', 'snis' when 'protocols' is 'https'"}
		case !hasAny(p, "https") && !set("methods", "hosts", "headers", "paths"):
			return []string{"must set one of 'methods', 'hosts', 'headers', 'paths' when 'protocols' is 'http'"}
		}
	case "tcp", "tls", "udp", "tls_passthrough":
		refuse("'tcp', 'tls', 'tls_passthrough' or 'udp'", "methods", "hosts", "paths", "headers")
		if hasAny(p, "tcp", "tls", "udp") && !set("sources", "destinations", "snis") {
			return []string{"must set one of 'sources', 'destinations', 'snis' when 'protocols' is 'tcp', 'tls' or 'udp'"}
		}
		if hasAny(p, "tls_passthrough") && !set("snis") {
			return []string{"must set snis when 'protocols' is 'tls_passthrough'"}
		}
	case "grpc", "grpcs":
		refuse("'grpc' or 'grpcs'", "methods", "sources", "destinations")
		if e["strip_path"] == true {
			errs["strip_path"] = "cannot set 'strip_path' when 'protocols' is 'grpc' or 'grpcs'"
		}
		switch {
		case hasAny(p, "grpcs") && !set("hosts", "headers", "paths", "snis"):
			return []string{"must set one of 'hosts', 'headers', 'paths', 'snis' when 'protocols' is 'grpcs'"}
		case !hasAny(p, "grpcs") && !set("hosts", "headers", "paths"):
			return []string{"must set one of 'hosts', 'headers', 'paths' when 'protocols' is 'grpc'"}
		}
	case "ws", "wss":
		if !set("hosts", "headers", "paths") {
			return []string{"must set one of 'hosts', 'headers', 'paths' when 'protocols' is 'ws' or 'wss'"}
		}
	}
	return nil
}

// checkExpressionRoute is the expressions router's route check (validate_route in Kong's
// routes.lua): an expression route or a traditional one, not both, and an expression the
// router accepts. It returns the message after "Router Expression failed validation: ".
func checkExpressionRoute(e map[string]any) string {
	expr, _ := e["expression"].(string)
	others := false
	for _, f := range routeMatchers {
		others = others || !kongrules.IsNull(e[f])
	}
	const fields = "'methods', 'hosts', 'paths', 'headers', 'snis', 'sources' or 'destinations'"
	switch {
	case expr == "" && !others:
		return ""
	case expr != "" && others:
		return "cannot set 'expression' with " + fields + " simultaneously"
	case expr != "" && !isZero(e["regex_priority"]):
		return "cannot set 'regex_priority' with 'expression' simultaneously"
	case others && !isZero(e["priority"]):
		return "cannot set 'priority' with " + fields + " simultaneously"
	case expr == "":
		return "" // a traditional route: Kong checks the expression it generates from the fields
	}
	return kongrules.Expression(expr, !hasAny(e["protocols"], "http", "https", "grpc", "grpcs", "ws", "wss"))
}

// checkTraditionalRegexes is the check both of the emulator's router flavors
// (traditional_compatible and expressions, which compile regexes with the Rust regex crate)
// make of a traditional route's regexes: Kong turns the route into an expression
// (kong/router/transform.lua: a path "~<re>" into http.path ~ "^<re>" with "?<" as "?P<", a
// header value "~*<re>" into any(lower(http.headers.<name>)) ~ "<re lowercased>") and refuses
// it when Rust refuses a regex. The message is the expression parser's over that one
// predicate (a header's without any() and lower()); Kong's spans the whole expression it
// generated (an approximation).
func checkTraditionalRegexes(e map[string]any) string {
	var preds []string
	if paths, ok := e["paths"].([]any); ok {
		for _, p := range paths {
			if s, ok := p.(string); ok && strings.HasPrefix(s, "~") {
				preds = append(preds, "http.path ~ "+atcString("^"+strings.ReplaceAll(s[1:], "?<", "?P<")))
			}
		}
	}
	if headers, ok := e["headers"].(map[string]any); ok {
		names := make([]string, 0, len(headers))
		for n := range headers {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			values, _ := headers[n].([]any)
			for _, v := range values {
				if s, ok := v.(string); ok && strings.HasPrefix(s, "~*") {
					field := "http.headers." + strings.ReplaceAll(strings.ToLower(n), "-", "_")
					preds = append(preds, field+" ~ "+atcString(strings.ToLower(s[2:])))
				}
			}
		}
	}
	for _, pred := range preds {
		if msg := kongrules.Expression(pred, false); msg != "" {
			return msg
		}
	}
	return ""
}

// atcString is s as transform.lua's escape_str writes it: a raw string unless s holds `"#`.
func atcString(s string) string {
	if !strings.Contains(s, `"#`) {
		return `r#"` + s + `"#`
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func isZero(v any) bool {
	n, ok := kongrules.ToFloat(v)
	return v == nil || (ok && n == 0)
}

// checkUpstream is Kong's upstream entity checks (upstreams.lua): the inputs each hash_on
// and hash_fallback need, the fallbacks each hash_on allows, distinct inputs, and the
// sticky-sessions cookie (Kong 3.11+).
func checkUpstream(e map[string]any) ([]string, map[string]any) {
	errs := errTree{}
	need := map[string]string{"header": "hash_on_header", "cookie": "hash_on_cookie",
		"query_arg": "hash_on_query_arg", "uri_capture": "hash_on_uri_capture"}
	if f, ok := need[fmt.Sprint(e["hash_on"])]; ok && e[f] == nil {
		errs[f] = "required field missing"
	}
	needFb := map[string]string{"header": "hash_fallback_header", "cookie": "hash_on_cookie",
		"query_arg": "hash_fallback_query_arg", "uri_capture": "hash_fallback_uri_capture"}
	if f, ok := needFb[fmt.Sprint(e["hash_fallback"])]; ok && e[f] == nil {
		errs[f] = "required field missing"
	}
	// The fallbacks each hash_on allows: not itself (headers, query args and captures may
	// differ by name), none after none or cookie.
	allowed := map[string][]string{
		"none":     {"none"},
		"cookie":   {"none"},
		"consumer": {"none", "ip", "header", "cookie", "path", "query_arg", "uri_capture"},
		"ip":       {"none", "consumer", "header", "cookie", "path", "query_arg", "uri_capture"},
		"path":     {"none", "consumer", "ip", "header", "cookie", "query_arg", "uri_capture"},
	}
	if ok, has := allowed[fmt.Sprint(e["hash_on"])]; has && !slices.Contains(ok, fmt.Sprint(e["hash_fallback"])) {
		errs["hash_fallback"] = "expected one of: " + strings.Join(ok, ", ")
	}
	var ent []string
	for _, pair := range [][2]string{{"hash_on_header", "hash_fallback_header"},
		{"hash_on_query_arg", "hash_fallback_query_arg"}, {"hash_on_uri_capture", "hash_fallback_uri_capture"}} {
		if e[pair[0]] != nil && e[pair[0]] == e[pair[1]] {
			ent = append(ent, "values of these fields must be distinct: '"+pair[0]+"', '"+pair[1]+"'")
		}
	}
	if e["algorithm"] == "sticky-sessions" && e["sticky_sessions_cookie"] == nil {
		errs["sticky_sessions_cookie"] = "required field missing"
	}
	if len(errs) == 0 {
		errs = nil
	}
	return ent, errs
}

// checkCookieName is utils.validate_cookie_name: an RFC 6265 token.
func checkCookieName(v any) any {
	s := v.(string)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= 32 || c >= 127 || strings.IndexByte(`()<>@,;:\"/?={}[]`, c) >= 0 {
			return "contains one or more invalid characters. ASCII control characters (0-31;127), space, " +
				`tab and the characters ()<>@,;:\"/?={}[] are not allowed.`
		}
	}
	return ""
}

func checkJWTSecret(e map[string]any) ([]string, map[string]any) {
	alg, _ := e["algorithm"].(string)
	if alg != "" && !strings.HasPrefix(alg, "HS") {
		k, _ := e["rsa_public_key"].(string)
		if k == "" {
			return nil, errTree{"rsa_public_key": "required field missing"}
		}
		if !validPublicKeyPEM(k) {
			return []string{"'rsa_public_key' format is invalid"}, nil
		}
	}
	return nil, nil
}

// ---- field checks ----

func checkName(v any) any { return kongrules.Name(v.(string)) }

func checkTag(v any) any { return kongrules.Tag(v.(string)) }

func checkHost(v any) any {
	s := v.(string)
	_, port, _, ok := kongrules.SplitHostPort(s)
	if port == kongrules.BadPort {
		return "must not have a port"
	}
	if !ok {
		return "invalid value: " + s
	}
	if port >= 0 {
		return "must not have a port"
	}
	return ""
}

func checkUpstreamName(v any) any {
	s := v.(string)
	_, port, kind, ok := kongrules.SplitHostPort(s)
	if !ok && port != kongrules.BadPort {
		return "Invalid name ('" + s + "'); must be a valid hostname"
	}
	if kind == "ipv4" || kind == "ipv6" {
		return "Invalid name ('" + s + "'); no ip addresses allowed"
	}
	if port != kongrules.NoPort {
		return "Invalid name ('" + s + "'); no port allowed"
	}
	return ""
}

func checkTarget(v any) any {
	s := v.(string)
	if _, _, _, ok := kongrules.SplitHostPort(s); !ok {
		return "Invalid target ('" + s + "'); not a valid hostname or ip address"
	}
	return ""
}

// normalizeTarget appends the default port 8000 as Kong does.
func normalizeTarget(s string) string {
	h, port, kind, ok := kongrules.SplitHostPort(s)
	if !ok {
		return s
	}
	if port < 0 {
		port = 8000
	}
	if kind == "ipv6" {
		ip := net.ParseIP(h)
		return fmt.Sprintf("[%s]:%d", ip.String(), port)
	}
	return fmt.Sprintf("%s:%d", h, port)
}

func checkRouteHost(v any) any { return kongrules.WildcardHost(v.(string), true).Msg }

func checkSNIName(v any) any { return kongrules.SNI(v.(string)).Msg }

func checkRouteHeaders(v any) any {
	m := v.(map[string]any)
	for _, k := range sortedKeys(m) {
		if kongrules.IsHostHeader(k) {
			return "cannot contain 'host' header"
		}
		if e := kongrules.HeaderName(k); e != "" {
			return e
		}
	}
	return ""
}

func checkRoutePath(v any) any { return kongrules.RoutePath(v.(string)).Msg }
