package kongplugins

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/konductor/konductor/internal/kongrouter"
)

// request-transformer and response-transformer (kong/plugins/request-transformer/access.lua,
// kong/plugins/response-transformer/header_transformer.lua and body_transformer.lua).

func init() {
	handlers["request-transformer"] = &handler{priority: 801, access: requestTransformer}
	handlers["response-transformer"] = &handler{priority: 800, headerFilter: responseTransformerHeaders,
		wantsBody: responseTransformerWantsBody, bodyFilter: responseTransformerBody}
}

var entryPattern = regexp.MustCompile(`^([^:]+):*(.*)$`)

// nameValue splits a "name:value" entry as the plugins do: the name up to the first colon, the
// colons after it skipped.
func nameValue(entry string) (string, string) {
	m := entryPattern.FindStringSubmatch(entry)
	if m == nil {
		return entry, ""
	}
	return m[1], m[2]
}

// templateEnv is the environment request-transformer's templates see.
func templateEnv(x *Exchange) map[string]luaValue {
	headers := map[string][]string{}
	for k, v := range x.Request.Header {
		headers[headerKey(k)] = v
	}
	var captures map[string]string
	if x.Match != nil {
		captures = x.Match.URICaptures
	}
	query := queryOf(x)
	return map[string]luaValue{
		"headers":      stringsTable(headers, func(k luaValue) string { return headerKey(luaToString(k)) }),
		"query_params": stringsTable(query, func(k luaValue) string { return luaToString(k) }),
		"uri_captures": luaTable(func(k luaValue) luaValue {
			v, ok := captures[luaToString(k)]
			if !ok {
				return nil
			}
			return v
		}),
		"shared": luaTable(func(luaValue) luaValue { return nil }),
	}
}

// headerKey is how OpenResty's header table finds a name: case-insensitive, "_" as "-".
func headerKey(name string) string { return strings.ReplaceAll(strings.ToLower(name), "_", "-") }

func requestTransformer(x *Exchange, conf config) *Response {
	env := templateEnv(x)
	render := func(v string) (string, bool) {
		if v == "" {
			return "", false
		}
		out, err := renderTemplate(v, env)
		if err != nil {
			return "", false
		}
		return out, true
	}
	failed := false
	value := func(v string) string {
		out, ok := render(v)
		if !ok && v != "" {
			failed = true
		}
		return out
	}
	// transform_uri
	if uri := conf.sub("replace").str("uri"); uri != "" {
		if p := value(uri); p != "" && strings.HasPrefix(p, "/") {
			x.Forward.Path = kongrouter.EscapePath(p)
		}
	}
	// transform_method
	if m := conf.str("http_method"); m != "" {
		x.Forward.Method = strings.ToUpper(m)
	}
	// transform_headers: remove, rename, replace, add, append.
	h := x.Forward.Header
	for _, name := range conf.sub("remove").strings("headers") {
		h.Del(name)
	}
	for _, entry := range conf.sub("rename").strings("headers") {
		old, renamed := nameValue(entry)
		if v := h.Values(old); len(v) > 0 {
			h.Del(old)
			h[http.CanonicalHeaderKey(renamed)] = v
		}
	}
	for _, entry := range conf.sub("replace").strings("headers") {
		name, v := nameValue(entry)
		if strings.EqualFold(name, "host") {
			x.Forward.HostHeader = value(v)
			continue
		}
		if h.Get(name) != "" {
			h.Set(name, value(v))
		}
	}
	for _, entry := range conf.sub("add").strings("headers") {
		name, v := nameValue(entry)
		if !strings.EqualFold(name, "host") && len(h.Values(name)) == 0 {
			h.Set(name, value(v))
		}
	}
	for _, entry := range conf.sub("append").strings("headers") {
		name, v := nameValue(entry)
		h.Add(name, value(v))
	}
	transformRequestBody(x, conf, value)
	// transform_querystrings
	if ops := queryOps(conf); ops {
		q, _ := url.ParseQuery(x.Forward.RawQuery)
		applyValuesOps(conf, "querystring", q, value)
		x.Forward.RawQuery = encodeSortedQuery(q)
	}
	if failed {
		return x.errorResponse(500, "An unexpected error occurred", nil)
	}
	return nil
}

func queryOps(conf config) bool {
	for _, op := range []string{"remove", "rename", "replace", "add", "append"} {
		if len(conf.sub(op).strings("querystring")) > 0 {
			return true
		}
	}
	return false
}

// transformRequestBody applies the body operations to a JSON or form body.
func transformRequestBody(x *Exchange, conf config, value func(string) string) {
	ops := false
	for _, op := range []string{"remove", "rename", "replace", "add", "append"} {
		if len(conf.sub(op).strings("body")) > 0 {
			ops = true
		}
	}
	if !ops || x.Body == nil || x.SetBody == nil {
		return
	}
	ct := x.Request.Header.Get("Content-Type")
	body := x.Body()
	switch {
	case strings.Contains(ct, "application/json"):
		m := map[string]any{}
		if len(body) > 0 && json.Unmarshal(body, &m) != nil {
			return
		}
		if len(body) > 0 {
			for _, name := range conf.sub("remove").strings("body") {
				delete(m, name)
			}
			for _, entry := range conf.sub("rename").strings("body") {
				old, renamed := nameValue(entry)
				if v, ok := m[old]; ok {
					delete(m, old)
					m[renamed] = v
				}
			}
			for _, entry := range conf.sub("replace").strings("body") {
				name, v := nameValue(entry)
				if truthy(m[name]) {
					m[name] = value(v)
				}
			}
		}
		for _, entry := range conf.sub("add").strings("body") {
			name, v := nameValue(entry)
			if !truthy(m[name]) {
				m[name] = value(v)
			}
		}
		for _, entry := range conf.sub("append").strings("body") {
			name, v := nameValue(entry)
			switch old := m[name].(type) {
			case []any:
				m[name] = append(old, value(v))
			case nil:
				m[name] = []any{value(v)}
			default:
				m[name] = []any{old, value(v)}
			}
		}
		out, _ := json.Marshal(m)
		x.SetBody(out)
	case strings.Contains(ct, "application/x-www-form-urlencoded"):
		q, _ := url.ParseQuery(string(body))
		applyValuesOps(conf, "body", q, value)
		x.SetBody([]byte(encodeSortedQuery(q)))
	}
}

// applyValuesOps applies the plugin's remove, rename, replace, add and append lists of one
// part ("querystring", "body") to arguments, in that order: replace only what is there, add
// only what is not.
func applyValuesOps(conf config, part string, q url.Values, value func(string) string) {
	for _, name := range conf.sub("remove").strings(part) {
		q.Del(name)
	}
	for _, entry := range conf.sub("rename").strings(part) {
		old, renamed := nameValue(entry)
		if v, ok := q[old]; ok {
			delete(q, old)
			q[renamed] = v
		}
	}
	for _, entry := range conf.sub("replace").strings(part) {
		name, v := nameValue(entry)
		if _, ok := q[name]; ok {
			q[name] = []string{value(v)}
		}
	}
	for _, entry := range conf.sub("add").strings(part) {
		name, v := nameValue(entry)
		if _, ok := q[name]; !ok {
			q[name] = []string{value(v)}
		}
	}
	for _, entry := range conf.sub("append").strings(part) {
		name, v := nameValue(entry)
		q[name] = append(q[name], value(v))
	}
}

// encodeSortedQuery is ngx.encode_args as kong.service.request.set_query calls it: keys sorted,
// each name and value escaped as a URI component.
func encodeSortedQuery(q url.Values) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		for _, v := range q[k] {
			parts = append(parts, escapeComponent(k)+"="+escapeComponent(v))
		}
	}
	return strings.Join(parts, "&")
}

func escapeComponent(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || strings.IndexByte("-_.~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteString("%" + strings.ToUpper(strconv.FormatUint(uint64(c)|0x100, 16)[1:]))
	}
	return b.String()
}

func responseTransformerHeaders(x *Exchange, conf config, status int, h http.Header) {
	for _, name := range conf.sub("remove").strings("headers") {
		h.Del(name)
	}
	for _, entry := range conf.sub("rename").strings("headers") {
		old, renamed := nameValue(entry)
		if v := h.Values(old); len(v) > 0 {
			h.Del(old)
			h.Set(renamed, v[0])
		}
	}
	for _, entry := range conf.sub("replace").strings("headers") {
		name, v := nameValue(entry)
		if h.Get(name) != "" {
			h.Set(name, v)
		}
	}
	for _, entry := range conf.sub("add").strings("headers") {
		name, v := nameValue(entry)
		if len(h.Values(name)) == 0 {
			h.Set(name, v)
		}
	}
	for _, entry := range conf.sub("append").strings("headers") {
		name, v := nameValue(entry)
		h.Add(name, v)
	}
	if responseTransformerWantsBody(conf, h) {
		h.Del("Content-Length")
	}
}

// responseTransformerWantsBody: a json operation is configured and the response is JSON.
func responseTransformerWantsBody(conf config, h http.Header) bool {
	ops := false
	for _, op := range []string{"remove", "rename", "replace", "add", "append"} {
		if len(conf.sub(op).strings("json")) > 0 {
			ops = true
		}
	}
	if !ops {
		return false
	}
	for _, part := range strings.Split(h.Get("Content-Type"), ",") {
		mt := strings.ToLower(strings.TrimSpace(strings.SplitN(part, ";", 2)[0]))
		if mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")) {
			return true
		}
	}
	return false
}

func responseTransformerBody(x *Exchange, conf config, h http.Header, body []byte) []byte {
	m := map[string]any{}
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	typed := func(op string) [][2]any {
		var out [][2]any
		types := conf.sub(op).strings("json_types")
		for i, entry := range conf.sub(op).strings("json") {
			name, v := nameValue(entry)
			var val any = v
			if i < len(types) {
				switch types[i] {
				case "number":
					f, err := strconv.ParseFloat(v, 64)
					if err != nil {
						continue
					}
					val = f
				case "boolean":
					val = v == "true"
				}
			}
			out = append(out, [2]any{name, val})
		}
		return out
	}
	for _, name := range conf.sub("remove").strings("json") {
		delete(m, name)
	}
	for _, entry := range conf.sub("rename").strings("json") {
		old, renamed := nameValue(entry)
		if v, ok := m[old]; ok && v != nil {
			delete(m, old)
			m[renamed] = v
		}
	}
	for _, nv := range typed("replace") {
		if truthy(m[nv[0].(string)]) {
			m[nv[0].(string)] = nv[1]
		}
	}
	for _, nv := range typed("add") {
		if !truthy(m[nv[0].(string)]) {
			m[nv[0].(string)] = nv[1]
		}
	}
	for _, nv := range typed("append") {
		name := nv[0].(string)
		switch old := m[name].(type) {
		case []any:
			m[name] = append(old, nv[1])
		case nil:
			m[name] = []any{nv[1]}
		default:
			m[name] = []any{old, nv[1]}
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}
