package kongplugins

import (
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/konductor/konductor/internal/kongrouter"
)

// The plugins that answer or restrict requests: request-termination, redirect, cors and
// ip-restriction (kong/plugins/<name>/handler.lua).

func init() {
	handlers["request-termination"] = &handler{priority: 2, access: requestTermination}
	handlers["redirect"] = &handler{priority: 779, access: redirect}
	handlers["cors"] = &handler{priority: 2000, noConsumer: true, access: corsAccess, headerFilter: corsHeaders}
	handlers["ip-restriction"] = &handler{priority: 990, access: ipRestriction}
}

var terminationMessages = map[int]string{401: "Unauthorized", 404: "Not found", 405: "Method not allowed",
	500: "An unexpected error occurred", 502: "Bad Gateway", 503: "Service unavailable"}

func requestTermination(x *Exchange, conf config) *Response {
	status := int(conf.number("status_code", 503))
	if trigger := conf.str("trigger"); trigger != "" {
		_, inQuery := queryOf(x)[trigger]
		if x.Request.Header.Get(trigger) == "" && !inQuery {
			return nil
		}
	}
	message := conf.str("message")
	if message == "" {
		message = terminationMessages[status]
	}
	if conf.boolean("echo") {
		body := map[string]any{
			"kong": map[string]any{"node_id": x.NodeID, "worker_pid": os.Getpid(), "hostname": x.Hostname},
			"request": map[string]any{
				"scheme": x.Request.Scheme, "host": hostOnly(x.Request.Host), "port": x.Request.ServerPort,
				"headers": lowerHeaders(x.Request.Header), "query": queryOf(x), "raw_body": string(bodyOf(x)),
				"method": x.Request.Method, "path": pathOf(x.Request.URI), "uri_captures": capturesOf(x),
			},
			"matched_route": x.Match.Route, "matched_service": x.Match.Service,
		}
		if message != "" {
			body["message"] = message
		}
		return exit(status, body, nil)
	}
	if b := conf.str("body"); b != "" {
		h := http.Header{}
		if ct := conf.str("content_type"); ct != "" {
			h.Set("Content-Type", ct)
		}
		return exit(status, b, h)
	}
	if message == "" {
		return exit(status, nil, nil)
	}
	return exit(status, map[string]string{"message": message}, nil)
}

func lowerHeaders(h http.Header) map[string]any {
	out := map[string]any{}
	for k, v := range h {
		if len(v) == 1 {
			out[strings.ToLower(k)] = v[0]
		} else {
			out[strings.ToLower(k)] = v
		}
	}
	return out
}

func bodyOf(x *Exchange) []byte {
	if x.Body == nil {
		return nil
	}
	return x.Body()
}

func capturesOf(x *Exchange) map[string]any {
	out := map[string]any{"named": map[string]string{}, "unnamed": []string{}}
	if x.Match == nil {
		return out
	}
	named := map[string]string{}
	var unnamed []string
	for i := 0; ; i++ {
		v, ok := x.Match.URICaptures[strconv.Itoa(i)]
		if !ok {
			break
		}
		unnamed = append(unnamed, v)
	}
	for k, v := range x.Match.URICaptures {
		if _, err := strconv.Atoi(k); err != nil {
			named[k] = v
		}
	}
	out["named"], out["unnamed"] = named, unnamed
	return out
}

// pathOf is kong.request.get_path(): the normalized path without the query.
func pathOf(uri string) string {
	if i := strings.IndexByte(uri, '?'); i >= 0 {
		uri = uri[:i]
	}
	return kongrouter.NormalizePath(uri, true)
}

func hostOnly(host string) string {
	if h, _, ok := strings.Cut(host, ":"); ok && !strings.HasPrefix(host, "[") {
		return h
	}
	return host
}

func redirect(x *Exchange, conf config) *Response {
	location := conf.str("location")
	if conf.boolean("keep_incoming_path") {
		if u, err := url.Parse(location); err == nil {
			u.Path, u.RawPath = pathOf(x.Request.URI), ""
			u.RawQuery, u.ForceQuery = "", false
			if i := strings.IndexByte(x.Request.URI, '?'); i >= 0 {
				u.RawQuery = x.Request.URI[i+1:]
			}
			location = u.String()
		}
	}
	return exit(int(conf.number("status_code", 301)), "redirecting", http.Header{"Location": {location}})
}

func ipRestriction(x *Exchange, conf config) *Response {
	ip, err := netip.ParseAddr(x.Request.ClientIP)
	reject := func() *Response {
		message := conf.str("message")
		if message == "" {
			message = "IP address not allowed: " + x.Request.ClientIP
		}
		return x.errorResponse(int(conf.number("status", 403)), message, nil)
	}
	if err != nil {
		return x.errorResponse(403, "Cannot identify the client IP address, unix domain sockets are not supported.", nil)
	}
	if deny := conf.strings("deny"); len(deny) > 0 && matchesAny(ip, deny) {
		return reject()
	}
	if allow := conf.strings("allow"); len(allow) > 0 && !matchesAny(ip, allow) {
		return reject()
	}
	return nil
}

func matchesAny(ip netip.Addr, list []string) bool {
	ip = ip.Unmap()
	for _, s := range list {
		if p, err := netip.ParsePrefix(s); err == nil && p.Contains(ip) {
			return true
		}
		if a, err := netip.ParseAddr(s); err == nil && a.Unmap() == ip {
			return true
		}
	}
	return false
}

const defaultCORSMethods = "GET,HEAD,PUT,PATCH,POST,DELETE,OPTIONS,TRACE,CONNECT"

// corsPreflight is a request the cors plugin answers itself.
func corsPreflight(r *kongrouter.Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get("Origin") != "" && len(r.Header.Values("Access-Control-Request-Method")) > 0
}

func corsAccess(x *Exchange, conf config) *Response {
	if !corsPreflight(x.Request) {
		return nil
	}
	x.corsHandled = true
	if conf.boolean("preflight_continue") {
		return nil
	}
	h := http.Header{}
	origin := x.Request.Header.Get("Origin")
	allowAll := corsOrigin(conf, h, origin, false)
	corsCredentials(conf, h, allowAll, origin, false)
	if headers := conf.strings("headers"); len(headers) > 0 {
		h.Set("Access-Control-Allow-Headers", strings.Join(headers, ","))
	} else if req := x.Request.Header.Get("Access-Control-Request-Headers"); req != "" {
		h.Set("Access-Control-Allow-Headers", req)
	}
	methods := conf.strings("methods")
	allowMethods := defaultCORSMethods
	if len(methods) > 0 {
		allowMethods = strings.Join(methods, ",")
	}
	h.Set("Access-Control-Allow-Methods", allowMethods)
	if v, ok := conf["max_age"]; ok && v != nil {
		h.Set("Access-Control-Max-Age", luaToString(conf.number("max_age", 0)))
	}
	if conf.boolean("private_network") && x.Request.Header.Get("Access-Control-Request-Private-Network") == "true" {
		h.Set("Access-Control-Allow-Private-Network", "true")
	}
	return exit(http.StatusOK, nil, h)
}

func corsHeaders(x *Exchange, conf config, status int, h http.Header) {
	origin := x.Request.Header.Get("Origin")
	if x.corsHandled || (origin == "" && conf["allow_origin_absent"] == false) {
		return
	}
	allowAll := corsOrigin(conf, h, origin, true)
	corsCredentials(conf, h, allowAll, origin, true)
	if exposed := conf.strings("exposed_headers"); len(exposed) > 0 {
		h.Set("Access-Control-Expose-Headers", strings.Join(exposed, ","))
	}
}

var plainOrigin = regexp.MustCompile(`^[A-Za-z0-9.:/-]+$`)

// corsOrigin is configure_origin: it sets Access-Control-Allow-Origin and reports whether every
// origin is allowed.
func corsOrigin(conf config, h http.Header, origin string, headerFilter bool) bool {
	origins := conf.strings("origins")
	if len(origins) == 0 || (len(origins) == 1 && origins[0] == "*") {
		h.Set("Access-Control-Allow-Origin", "*")
		return true
	}
	if headerFilter {
		h.Add("Vary", "Origin")
	} else {
		h.Set("Vary", "Origin")
	}
	if len(origins) == 1 && plainOrigin.MatchString(origins[0]) {
		h.Set("Access-Control-Allow-Origin", origins[0])
		return false
	}
	if origin != "" {
		normalized := normalizeOrigin(origin)
		for _, o := range origins {
			if o == "*" {
				h.Set("Access-Control-Allow-Origin", "*")
				return true
			}
			matched := false
			if !plainOrigin.MatchString(o) {
				pattern := strings.TrimPrefix(o, "^")
				if !strings.HasSuffix(pattern, "$") {
					pattern += "$"
				}
				subject := normalized
				if !strings.Contains(o, ":") {
					if u, err := url.Parse(normalized); err == nil {
						subject = u.Hostname()
					}
				}
				if re, err := regexp.Compile("^(?:" + pattern + ")"); err == nil {
					matched = re.MatchString(subject)
				}
			} else {
				matched = normalizeOrigin(o) == normalized
			}
			if matched {
				h.Set("Access-Control-Allow-Origin", normalized)
				return false
			}
		}
	}
	h.Del("Access-Control-Allow-Origin")
	return false
}

// normalizeOrigin is scheme://host[:port] without the scheme's default port.
func normalizeOrigin(origin string) string {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return origin
	}
	port := u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	out := strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname())
	if port != "" {
		out += ":" + port
	}
	return out
}

func corsCredentials(conf config, h http.Header, allowAll bool, origin string, headerFilter bool) {
	if !conf.boolean("credentials") {
		return
	}
	if !allowAll {
		h.Set("Access-Control-Allow-Credentials", "true")
		return
	}
	if origin != "" {
		if headerFilter {
			h.Add("Vary", "Origin")
		} else {
			h.Set("Vary", "Origin")
		}
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Credentials", "true")
	}
}
