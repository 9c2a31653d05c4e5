package kongemu

import (
	"fmt"
	"net"
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

func checkRoute(e map[string]any) ([]string, map[string]any) {
	p := e["protocols"]
	set := func(names ...string) bool {
		for _, n := range names {
			if !kongrules.IsNull(e[n]) {
				return true
			}
		}
		return false
	}
	errs := errTree{}
	var ent []string
	switch {
	case hasAny(p, "https"):
		if !set("methods", "hosts", "headers", "paths", "snis") {
			ent = append(ent, "must set one of 'methods', 'hosts', 'headers', 'paths', 'snis' when 'protocols' is 'https'")
		}
	case hasAny(p, "http"):
		if !set("methods", "hosts", "headers", "paths") {
			ent = append(ent, "must set one of 'methods', 'hosts', 'headers', 'paths' when 'protocols' is 'http'")
		}
	case hasAny(p, "grpcs"):
		if !set("hosts", "headers", "paths", "snis") {
			ent = append(ent, "must set one of 'hosts', 'headers', 'paths', 'snis' when 'protocols' is 'grpcs'")
		}
	case hasAny(p, "grpc"):
		if !set("hosts", "headers", "paths") {
			ent = append(ent, "must set one of 'hosts', 'headers', 'paths' when 'protocols' is 'grpc'")
		}
	case hasAny(p, "tcp", "tls", "udp"):
		if !set("sources", "destinations", "snis") {
			ent = append(ent, "must set one of 'sources', 'destinations', 'snis' when 'protocols' is 'tcp', 'tls' or 'udp'")
		}
	case hasAny(p, "tls_passthrough"):
		if !set("snis") {
			errs["snis"] = "required field missing"
		}
	case hasAny(p, "ws", "wss"):
		if !set("hosts", "headers", "paths") {
			ent = append(ent, "must set one of 'hosts', 'headers', 'paths' when 'protocols' is 'ws' or 'wss'")
		}
	}
	if !kongrules.IsNull(e["snis"]) && !hasAny(p, "https", "grpcs", "tls", "tls_passthrough", "wss") {
		errs["snis"] = "'snis' can only be set when 'protocols' is 'grpcs', 'https', 'tls', 'tls_passthrough' or 'wss'"
	}
	if hasAny(p, "tcp", "tls", "udp", "tls_passthrough") {
		for _, f := range []string{"methods", "hosts", "paths", "headers"} {
			if !kongrules.IsNull(e[f]) {
				errs[f] = fmt.Sprintf("cannot set '%s' when 'protocols' is 'tcp', 'tls', 'tls_passthrough' or 'udp'", f)
			}
		}
	} else {
		for _, f := range []string{"sources", "destinations"} {
			if !kongrules.IsNull(e[f]) {
				errs[f] = fmt.Sprintf("cannot set '%s' when 'protocols' is 'http', 'https', 'grpc', 'grpcs', 'ws' or 'wss'", f)
			}
		}
	}
	if len(errs) == 0 {
		errs = nil
	}
	return ent, errs
}

func checkUpstream(e map[string]any) ([]string, map[string]any) {
	errs := errTree{}
	need := map[string]string{"header": "hash_on_header", "cookie": "hash_on_cookie",
		"query_arg": "hash_on_query_arg", "uri_capture": "hash_on_uri_capture"}
	if f, ok := need[fmt.Sprint(e["hash_on"])]; ok && e[f] == nil {
		errs[f] = "required field missing"
	}
	needFb := map[string]string{"header": "hash_fallback_header", "query_arg": "hash_fallback_query_arg",
		"uri_capture": "hash_fallback_uri_capture"}
	if f, ok := needFb[fmt.Sprint(e["hash_fallback"])]; ok && e[f] == nil {
		errs[f] = "required field missing"
	}
	var ent []string
	if e["hash_on"] == "none" && e["hash_fallback"] != "none" {
		errs["hash_fallback"] = "expected one of: none"
	}
	if e["hash_on"] == "cookie" && e["hash_fallback"] != "none" {
		errs["hash_fallback"] = "expected one of: none"
	}
	if len(errs) == 0 {
		errs = nil
	}
	return ent, errs
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
