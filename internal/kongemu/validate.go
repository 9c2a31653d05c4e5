package kongemu

import (
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/konductor/konductor/internal/kongrules"
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

var methodRe = regexp.MustCompile(`^[A-Z]+$`)

func checkMethod(v any) any {
	if !methodRe.MatchString(v.(string)) {
		return "invalid value: " + v.(string)
	}
	return ""
}

func checkHeaderName(v any) any { return kongrules.HeaderName(v.(string)) }

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

func checkServicePath(v any) any { return kongrules.ServicePath(v.(string)).Msg }

func checkRoutePath(v any) any { return kongrules.RoutePath(v.(string)).Msg }

// sortedErrKeys orders error tree keys as Kong's messages do.
func sortedErrKeys(t errTree) []string {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
