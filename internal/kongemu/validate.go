package kongemu

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"regexp"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
)

// sparse is an error tree for an array: index (0-based) -> error. It is
// encoded the way Kong's cjson encodes a sparse Lua array: a JSON array
// with nulls, or an object with 1-based keys when it is too sparse.
type sparse map[int]any

// MarshalJSON implements cjson's encode_sparse_array(true) rule (ratio 2, safe 10).
func (s sparse) MarshalJSON() ([]byte, error) {
	maxIdx := 0
	for i := range s {
		if i+1 > maxIdx {
			maxIdx = i + 1
		}
	}
	if maxIdx > 10 && maxIdx > len(s)*2 {
		m := make(map[string]any, len(s))
		for i, v := range s {
			m[strconv.Itoa(i+1)] = v
		}
		return json.Marshal(m)
	}
	arr := make([]any, maxIdx)
	for i, v := range s {
		arr[i] = v
	}
	return json.Marshal(arr)
}

// errTree is Kong's nested field error table: field -> string | errTree | sparse,
// plus "@entity" -> []any of strings.
type errTree = map[string]any

func addEntityErr(t errTree, msg string) {
	l, _ := t["@entity"].([]any)
	t["@entity"] = append(l, msg)
}

// mergeErr merges the tree b into a.
func mergeErr(a errTree, b errTree) {
	for k, v := range b {
		if k == "@entity" {
			for _, m := range v.([]any) {
				addEntityErr(a, m.(string))
			}
			continue
		}
		if _, ok := a[k]; !ok {
			a[k] = v
		}
	}
}

// validator carries the options of one validation pass.
type validator struct {
	defaults bool // apply defaults to absent fields (insert, upsert, declarative)
}

// validateRecord validates in against fields fs. It returns the normalized
// record (every field present, nil where unset) and an error tree (nil when valid).
func (v validator) validateRecord(fs []*field, in map[string]any) (map[string]any, errTree) {
	out := make(map[string]any, len(fs))
	errs := errTree{}
	known := make(map[string]bool, len(fs))
	for _, f := range fs {
		known[f.Name] = true
	}
	for k := range in {
		if !known[k] {
			errs[k] = "unknown field"
		}
	}
	for _, f := range fs {
		val, present := in[f.Name]
		if !present {
			if v.defaults && f.Default != nil {
				val = deepCopy(f.Default)
				present = true
			} else if v.defaults && f.Type == tRecord && f.Fields != nil && f.Required {
				val = map[string]any{}
				present = true
			}
		}
		if val == nil {
			if f.Required && !f.Auto && f.Type != tForeign {
				errs[f.Name] = "required field missing"
			} else if f.Required && f.Type == tForeign {
				errs[f.Name] = "required field missing"
			}
			out[f.Name] = nil
			continue
		}
		nv, e := v.validateValue(f, val)
		if e != nil {
			errs[f.Name] = e
		}
		out[f.Name] = nv
	}
	if len(errs) == 0 {
		return out, nil
	}
	return out, errs
}

// validateValue checks one non-nil value against f.
func (v validator) validateValue(f *field, val any) (any, any) {
	switch f.Type {
	case tString:
		s, ok := val.(string)
		if !ok {
			return val, "expected a string"
		}
		minLen := f.LenMin
		if minLen == 0 {
			minLen = 1
		}
		if utf8.RuneCountInString(s) < minLen {
			return val, fmt.Sprintf("length must be at least %d", minLen)
		}
		if f.UUID {
			if _, err := uuid.Parse(s); err != nil || len(s) != 36 {
				return val, "expected a valid UUID"
			}
		}
		if f.OneOf != nil && !oneOf(f.OneOf, s) {
			return val, "expected one of: " + joinAny(f.OneOf)
		}
	case tInt:
		n, ok := toFloat(val)
		if !ok || n != math.Trunc(n) || math.IsInf(n, 0) {
			return val, "expected an integer"
		}
		val = int64(n)
		if f.OneOf != nil && !oneOf(f.OneOf, int64(n)) {
			return val, "expected one of: " + joinAny(f.OneOf)
		}
		if f.Between != nil && (n < f.Between[0] || n > f.Between[1]) {
			return val, fmt.Sprintf("value should be between %s and %s", fnum(f.Between[0]), fnum(f.Between[1]))
		}
		if f.GT != nil && n <= *f.GT {
			return val, fmt.Sprintf("value must be greater than %s", fnum(*f.GT))
		}
	case tNum:
		n, ok := toFloat(val)
		if !ok {
			return val, "expected a number"
		}
		val = n
		if f.Between != nil && (n < f.Between[0] || n > f.Between[1]) {
			return val, fmt.Sprintf("value should be between %s and %s", fnum(f.Between[0]), fnum(f.Between[1]))
		}
		if f.GT != nil && n <= *f.GT {
			return val, fmt.Sprintf("value must be greater than %s", fnum(*f.GT))
		}
	case tBool:
		if _, ok := val.(bool); !ok {
			return val, "expected a boolean"
		}
	case tArray, tSet:
		arr, ok := val.([]any)
		if !ok {
			// Kong accepts an empty JSON object as an empty array.
			if m, isMap := val.(map[string]any); isMap && len(m) == 0 {
				return []any{}, nil
			}
			if f.Type == tSet {
				return val, "expected a set"
			}
			return val, "expected an array"
		}
		out := make([]any, 0, len(arr))
		errs := sparse{}
		for i, el := range arr {
			if el == nil {
				errs[i] = "required field missing"
				out = append(out, nil)
				continue
			}
			nv, e := v.validateValue(f.Elem, el)
			if e != nil {
				errs[i] = e
			}
			out = append(out, nv)
		}
		if len(errs) > 0 {
			return out, errs
		}
		val = out
	case tMap:
		m, ok := val.(map[string]any)
		if !ok {
			return val, "expected a map"
		}
		out := make(map[string]any, len(m))
		errs := errTree{}
		for k, el := range m {
			if f.Key != nil {
				if _, e := v.validateValue(f.Key, k); e != nil {
					errs[k] = e
					continue
				}
			}
			if el == nil {
				out[k] = nil
				continue
			}
			nv, e := v.validateValue(f.Elem, el)
			if e != nil {
				errs[k] = e
			}
			out[k] = nv
		}
		if len(errs) > 0 {
			return out, errs
		}
		val = out
	case tRecord:
		m, ok := val.(map[string]any)
		if !ok {
			return val, "expected a record"
		}
		if f.Fields == nil {
			return val, nil
		}
		out, errs := v.validateRecord(f.Fields, m)
		if errs != nil {
			return out, errs
		}
		val = out
	case tForeign:
		m, ok := val.(map[string]any)
		if !ok {
			return val, "expected a record"
		}
		// Foreign keys are {id} (or the referenced entity's endpoint key, resolved later).
		for k, x := range m {
			if k == "id" {
				s, isStr := x.(string)
				if !isStr {
					return val, errTree{"id": "expected a string"}
				}
				if _, err := uuid.Parse(s); err != nil || len(s) != 36 {
					return val, errTree{"id": "expected a valid UUID"}
				}
				continue
			}
			ref := schemas[f.Ref]
			if ref == nil || ref.EndpointKey != k {
				return val, errTree{k: "unknown field"}
			}
			if _, isStr := x.(string); !isStr {
				return val, errTree{k: "expected a string"}
			}
		}
		if len(m) == 0 {
			return val, errTree{"id": "required field missing"}
		}
	case tJSON:
	}
	if f.Check != nil {
		if e := f.Check(val); e != nil {
			if s, ok := e.(string); !ok || s != "" {
				return val, e
			}
		}
	}
	return val, nil
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}

func fnum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func oneOf(set []any, v any) bool {
	for _, x := range set {
		switch y := x.(type) {
		case int:
			if n, ok := v.(int64); ok && int64(y) == n {
				return true
			}
		default:
			if x == v {
				return true
			}
		}
	}
	return false
}

func joinAny(l []any) string {
	parts := make([]string, len(l))
	for i, x := range l {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ", ")
}

// ---- entity checks ----

func isNull(v any) bool {
	if v == nil {
		return true
	}
	switch x := v.(type) {
	case string:
		return false
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return strings.Join(q, ", ")
}

// getPath reads a dotted path ("config.second") from an entity.
func getPath(e map[string]any, path string) any {
	var cur any = e
	for _, p := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func atLeastOneOf(names ...string) entityCheck {
	return func(e map[string]any) ([]string, map[string]any) {
		for _, n := range names {
			if !isNull(getPath(e, n)) {
				return nil, nil
			}
		}
		return []string{"at least one of these fields must be non-empty: " + quoteList(names)}, nil
	}
}

func onlyOneOf(names ...string) entityCheck {
	return func(e map[string]any) ([]string, map[string]any) {
		n := 0
		for _, name := range names {
			if !isNull(getPath(e, name)) {
				n++
			}
		}
		if n > 1 {
			return []string{"only one of these fields must be non-empty: " + quoteList(names)}, nil
		}
		return nil, nil
	}
}

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
		if !isNull(e["ca_certificates"]) {
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
			if !isNull(e[n]) {
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
	if !isNull(e["snis"]) && !hasAny(p, "https", "grpcs", "tls", "tls_passthrough", "wss") {
		errs["snis"] = "'snis' can only be set when 'protocols' is 'grpcs', 'https', 'tls', 'tls_passthrough' or 'wss'"
	}
	if hasAny(p, "tcp", "tls", "udp", "tls_passthrough") {
		for _, f := range []string{"methods", "hosts", "paths", "headers"} {
			if !isNull(e[f]) {
				errs[f] = fmt.Sprintf("cannot set '%s' when 'protocols' is 'tcp', 'tls', 'tls_passthrough' or 'udp'", f)
			}
		}
	} else {
		for _, f := range []string{"sources", "destinations"} {
			if !isNull(e[f]) {
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

var utf8NameRe = regexp.MustCompile(`^[A-Za-z0-9._~\-\x{80}-\x{10FFFF}]+$`)

func checkName(v any) any {
	s := v.(string)
	if !utf8.ValidString(s) {
		return "invalid utf-8 character sequence detected"
	}
	if !utf8NameRe.MatchString(s) {
		return "invalid value '" + s + "': the only accepted ascii characters are alphanumerics or ., -, _, and ~"
	}
	return ""
}

func checkTag(v any) any {
	s := v.(string)
	if !utf8.ValidString(s) {
		return "invalid tag '" + s + "': expected printable ascii (except `,` and `/`) or valid utf-8 sequences"
	}
	for _, r := range s {
		if r < 0x80 && (r < 0x21 || r > 0x7e || r == ',' || r == '/') {
			return "invalid tag '" + s + "': expected printable ascii (except `,` and `/`) or valid utf-8 sequences"
		}
	}
	return ""
}

var hostnameRe = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_\-]*[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_\-]*[A-Za-z0-9_])?)*\.?$`)

// splitHostPort parses "host", "host:port", "[v6]", "[v6]:port", "v6".
// It returns the host, the port (-1 when absent) and ok=false when the
// string is not a hostname or an IP address, or the port is invalid.
func splitHostPort(s string) (host string, port int, kind string, ok bool) {
	port = -1
	if ip := net.ParseIP(s); ip != nil {
		if ip.To4() != nil && strings.Count(s, ".") == 3 {
			return s, -1, "ipv4", true
		}
		if strings.Contains(s, ":") {
			return s, -1, "ipv6", true
		}
	}
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return s, -1, "", false
		}
		h := s[1:end]
		if ip := net.ParseIP(h); ip == nil || !strings.Contains(h, ":") {
			return s, -1, "", false
		}
		rest := s[end+1:]
		if rest == "" {
			return h, -1, "ipv6", true
		}
		if !strings.HasPrefix(rest, ":") {
			return s, -1, "", false
		}
		p, err := strconv.Atoi(rest[1:])
		if err != nil || p < 0 || p > 65535 {
			return h, -2, "ipv6", false
		}
		return h, p, "ipv6", true
	}
	h := s
	if i := strings.LastIndex(s, ":"); i >= 0 {
		h = s[:i]
		p, err := strconv.Atoi(s[i+1:])
		if err != nil || p < 0 || p > 65535 || s[i+1:] == "" {
			return h, -2, "", false
		}
		port = p
	}
	if net.ParseIP(h) != nil && strings.Count(h, ".") == 3 {
		return h, port, "ipv4", true
	}
	if isDottedNumeric(h) {
		return h, port, "", false
	}
	if !hostnameRe.MatchString(h) || len(h) > 253 {
		return h, port, "", false
	}
	return h, port, "name", true
}

func isDottedNumeric(h string) bool {
	if h == "" {
		return false
	}
	for _, r := range h {
		if (r < '0' || r > '9') && r != '.' {
			return false
		}
	}
	return true
}

func checkHost(v any) any {
	s := v.(string)
	_, port, _, ok := splitHostPort(s)
	if port == -2 {
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
	_, port, kind, ok := splitHostPort(s)
	if !ok && port != -2 {
		return "Invalid name ('" + s + "'); must be a valid hostname"
	}
	if kind == "ipv4" || kind == "ipv6" {
		return "Invalid name ('" + s + "'); no ip addresses allowed"
	}
	if port != -1 {
		return "Invalid name ('" + s + "'); no port allowed"
	}
	return ""
}

func checkTarget(v any) any {
	s := v.(string)
	if _, _, _, ok := splitHostPort(s); !ok {
		return "Invalid target ('" + s + "'); not a valid hostname or ip address"
	}
	return ""
}

// normalizeTarget appends the default port 8000 as Kong does.
func normalizeTarget(s string) string {
	h, port, kind, ok := splitHostPort(s)
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

func checkWildcardHost(s string, allowPort bool) any {
	if n := strings.Count(s, "*"); n > 0 {
		if n > 1 {
			return "invalid wildcard: must have at most one wildcard"
		}
		switch {
		case strings.HasPrefix(s, "*."):
			s = "x" + s[1:]
		case strings.HasSuffix(s, ".*"):
			s = s[:len(s)-1] + "x"
		default:
			return "invalid wildcard: must be placed at leftmost or rightmost label"
		}
	}
	_, port, _, ok := splitHostPort(s)
	if port == -2 {
		return "invalid port number"
	}
	if !ok {
		return "invalid hostname: " + s
	}
	if port >= 0 && !allowPort {
		return "must not have a port"
	}
	return ""
}

func checkRouteHost(v any) any { return checkWildcardHost(v.(string), true) }

func checkSNIName(v any) any {
	s := v.(string)
	if r := checkWildcardHost(s, false); r != "" {
		return r
	}
	if _, _, kind, _ := splitHostPort(s); kind == "ipv4" || kind == "ipv6" {
		return "must not be an IP"
	}
	return ""
}

var methodRe = regexp.MustCompile(`^[A-Z]+$`)

func checkMethod(v any) any {
	if !methodRe.MatchString(v.(string)) {
		return "invalid value: " + v.(string)
	}
	return ""
}

var headerNameRe = regexp.MustCompile(`^[A-Za-z0-9_\-]+$`)

func checkHeaderName(v any) any {
	s := v.(string)
	if !headerNameRe.MatchString(s) {
		return "bad header name '" + s + "', allowed characters are A-Z, a-z, 0-9, '_', and '-'"
	}
	return ""
}

func checkRouteHeaders(v any) any {
	m := v.(map[string]any)
	for _, k := range sortedKeys(m) {
		if strings.EqualFold(k, "host") {
			return "cannot contain 'host' header"
		}
		if e := checkHeaderName(k); e != "" {
			return e
		}
	}
	return ""
}

func checkIPOrCIDR(v any) any {
	s := v.(string)
	if net.ParseIP(s) != nil {
		return ""
	}
	if _, _, err := net.ParseCIDR(s); err == nil {
		return ""
	}
	return "invalid ip or cidr range: '" + s + "'"
}

func checkURL(v any) any {
	s := v.(string)
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "cannot parse '" + s + "'"
	}
	return ""
}

const rfc3986Chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~:/?#[]@!$&'()*+,;=%"

func checkPercent(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '%' {
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				end := i + 3
				if end > len(s) {
					end = len(s)
				}
				return "invalid url-encoded value: '" + s[i:end] + "'"
			}
		}
	}
	return ""
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func checkServicePath(v any) any {
	s := v.(string)
	if !strings.HasPrefix(s, "/") {
		return "should start with: /"
	}
	if strings.Contains(s, "//") {
		return "must not have empty segments"
	}
	for _, r := range s {
		if !strings.ContainsRune(rfc3986Chars, r) {
			return "invalid path: '" + s + "' (characters outside of the reserved list of RFC 3986 found)"
		}
	}
	if e := checkPercent(s); e != "" {
		return e
	}
	return ""
}

func checkRoutePath(v any) any {
	s := v.(string)
	if !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "~/") {
		return "should start with: / (fixed path) or ~/ (regex path)"
	}
	if strings.Contains(s, "//") {
		return "must not have empty segments"
	}
	if strings.HasPrefix(s, "~") {
		re := s[1:]
		if e := checkPCRE(re); e != "" {
			return fmt.Sprintf("invalid regex: '%s' (PCRE returned: %s)", re, e)
		}
		return ""
	}
	for _, r := range s {
		if !strings.ContainsRune(rfc3986Chars, r) {
			return "invalid path: '" + s + "' (characters outside of the reserved list of RFC 3986 found)"
		}
	}
	if e := checkPercent(s); e != "" {
		return e
	}
	return ""
}

// pcreOnly rewrites PCRE constructs that Go's RE2 syntax lacks into
// equivalents of the same shape, so that a pattern Go rejects only for
// using them is not rejected by the emulator (Kong accepts them).
var pcreOnly = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`\(\?(<=|<!|=|!|>|\|)`), "(?:"}, // lookaround, atomic, branch reset
	{regexp.MustCompile(`\\[1-9][0-9]*`), "x"},          // back-references
	{regexp.MustCompile(`\\[gk](\{[^}]*\}|<[^>]*>|'[^']*'|-?[0-9]+)`), "x"},
	{regexp.MustCompile(`\(\?P=[A-Za-z_][A-Za-z0-9_]*\)`), "x"},
	{regexp.MustCompile(`\\[GKZ]`), ""},
	{regexp.MustCompile(`\\[hR]`), `\s`},
	{regexp.MustCompile(`\\[HV]`), `\S`},
	{regexp.MustCompile(`\\v`), `\s`},
	{regexp.MustCompile(`([*+?}])\+`), "$1"}, // possessive quantifiers
	{regexp.MustCompile(`\(\?<([A-Za-z_][A-Za-z0-9_]*)>`), "(?P<$1>"},
	{regexp.MustCompile(`\(\?'([A-Za-z_][A-Za-z0-9_]*)'`), "(?P<$1>"},
}

var bigRepeat = regexp.MustCompile(`\{([0-9]+)(,([0-9]*))?\}`)

// checkPCRE reports why PCRE would reject pattern, or "".
func checkPCRE(pattern string) string {
	p := pattern
	for _, r := range pcreOnly {
		p = r.re.ReplaceAllString(p, r.repl)
	}
	// PCRE allows repeat counts up to 65535, RE2 up to 1000.
	var tooBig, order bool
	p = bigRepeat.ReplaceAllStringFunc(p, func(m string) string {
		sub := bigRepeat.FindStringSubmatch(m)
		lo, err1 := strconv.Atoi(sub[1])
		hi, err2 := strconv.Atoi(sub[3])
		if err1 != nil || lo > 65535 || (sub[3] != "" && (err2 != nil || hi > 65535)) {
			tooBig = true
			return m
		}
		if sub[3] != "" && hi < lo {
			order = true
			return m
		}
		if lo > 1000 || hi > 1000 {
			return "{1}"
		}
		return m
	})
	if tooBig {
		return "number too big in {} quantifier"
	}
	if order {
		return "numbers out of order in {} quantifier"
	}
	if _, err := regexp.Compile(p); err != nil {
		var se *syntax.Error
		if errors.As(err, &se) {
			if m, ok := pcreMessages[se.Code]; ok {
				return m
			}
			return se.Code.String()
		}
		return strings.TrimPrefix(err.Error(), "error parsing regexp: ")
	}
	return ""
}

// pcreMessages translates RE2 parse errors into PCRE2's wording.
var pcreMessages = map[syntax.ErrorCode]string{
	syntax.ErrMissingParen:          "missing closing parenthesis",
	syntax.ErrUnexpectedParen:       "unmatched closing parenthesis",
	syntax.ErrMissingBracket:        "missing terminating ] for character class",
	syntax.ErrMissingRepeatArgument: "quantifier does not follow a repeatable item",
	syntax.ErrInvalidRepeatOp:       "quantifier does not follow a repeatable item",
	syntax.ErrInvalidRepeatSize:     "numbers out of order in {} quantifier",
	syntax.ErrInvalidCharRange:      "range out of order in character class",
	syntax.ErrInvalidEscape:         "unrecognized character follows \\",
	syntax.ErrTrailingBackslash:     "\\ at end of pattern",
	syntax.ErrInvalidNamedCapture:   "syntax error in subpattern name (missing terminator?)",
	syntax.ErrInvalidPerlOp:         "unrecognized character after (? or (?-",
}

// sortedErrKeys orders error tree keys as Kong's messages do.
func sortedErrKeys(t errTree) []string {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
