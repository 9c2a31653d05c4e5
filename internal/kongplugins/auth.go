package kongplugins

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/kong/go-kong/kong"
)

// The authentication plugins konductor emits (kong/plugins/key-auth, basic-auth, acl).

func init() {
	handlers["key-auth"] = &handler{priority: 1250, noConsumer: true, access: keyAuth}
	handlers["basic-auth"] = &handler{priority: 1100, noConsumer: true, access: basicAuth}
	handlers["acl"] = &handler{priority: 950, noConsumer: true, access: acl}
}

// authFlow is the logical AND and OR of Kong's authentication plugins: without anonymous a
// failure answers; with it, an earlier plugin's credential is enough, and a failure
// authenticates the anonymous consumer.
func authFlow(x *Exchange, rt *Runtime, conf config, authenticate func() *Response) *Response {
	anonymous := conf.str("anonymous")
	if anonymous == "" {
		return authenticate()
	}
	if x.Credential != nil {
		return nil
	}
	if failure := authenticate(); failure == nil {
		return nil
	}
	consumer := rt.consumers[anonymous]
	if consumer == nil {
		consumer = rt.byUsername[anonymous]
	}
	if consumer == nil {
		return x.errorResponse(500, "anonymous consumer "+anonymous+" is configured but doesn't exist", nil)
	}
	setConsumer(x, consumer, nil, "")
	return nil
}

// setConsumer is the plugins' set_consumer: kong.client.authenticate and the consumer headers.
func setConsumer(x *Exchange, c *kong.Consumer, credential any, identifier string) {
	x.Consumer, x.Credential = c, credential
	h := x.Forward.Header
	set := func(name string, v *string) {
		if v != nil && *v != "" {
			h.Set(name, *v)
		} else {
			h.Del(name)
		}
	}
	set("X-Consumer-ID", c.ID)
	set("X-Consumer-Custom-ID", c.CustomID)
	set("X-Consumer-Username", c.Username)
	if credential != nil {
		set("X-Credential-Identifier", &identifier)
		h.Del("X-Anonymous-Consumer")
	} else {
		h.Del("X-Credential-Identifier")
		h.Set("X-Anonymous-Consumer", "true")
	}
}

func keyAuth(x *Exchange, conf config) *Response {
	rt := x.runtime
	if x.Request.Method == http.MethodOptions && conf["run_on_preflight"] == false {
		return nil
	}
	return authFlow(x, rt, conf, func() *Response {
		challenge := "Key"
		if realm := conf.str("realm"); realm != "" {
			challenge = `Key realm="` + realm + `"`
		}
		unauthorized := func(msg string) *Response {
			return x.errorResponse(401, msg, challengeHeader(challenge))
		}
		names := conf.strings("key_names")
		if names == nil {
			names = []string{"apikey"}
		}
		inHeader := conf["key_in_header"] != false
		inQuery := conf["key_in_query"] != false
		var key string
		query := queryOf(x)
		for _, name := range names {
			var values []string
			var where string
			if inHeader {
				values, where = x.Request.Header.Values(name), "header"
			}
			if len(values) == 0 && inQuery {
				values, where = query[name], "query"
			}
			if len(values) == 0 && conf.boolean("key_in_body") {
				if v, ok := bodyArg(x, name); ok {
					values, where = []string{v}, "body"
				}
			}
			if len(values) > 1 {
				return unauthorized("Duplicate API key found")
			}
			if len(values) == 1 && !(where == "query" && values[0] == "" && !hasQueryValue(x.Request.URI, name)) {
				key = values[0]
				if conf.boolean("hide_credentials") {
					x.Forward.Header.Del(name)
					removeQueryArg(x, name)
				}
				break
			}
		}
		if key == "" {
			return unauthorized("No API key found in request")
		}
		cred := rt.keyAuths[key]
		if cred == nil || cred.Consumer == nil || cred.Consumer.ID == nil {
			return unauthorized("Unauthorized")
		}
		consumer := rt.consumers[*cred.Consumer.ID]
		if consumer == nil {
			return x.errorResponse(500, "An unexpected error occurred", nil)
		}
		setConsumer(x, consumer, cred, stringOf(cred.ID))
		return nil
	})
}

var basicScheme = regexp.MustCompile(`\s*[Bb]asic\s*(.+)`)

func basicAuth(x *Exchange, conf config) *Response {
	rt := x.runtime
	return authFlow(x, rt, conf, func() *Response {
		realm := conf.str("realm")
		if _, set := conf["realm"]; !set {
			realm = "service"
		}
		unauthorized := x.errorResponse(401, "Unauthorized", challengeHeader(`Basic realm="`+realm+`"`))
		h := x.Request.Header
		if h.Get("Authorization") == "" && h.Get("Proxy-Authorization") == "" {
			return unauthorized
		}
		var cred *kong.BasicAuth
		var password string
		for _, name := range []string{"Proxy-Authorization", "Authorization"} {
			user, pass, ok := basicCredentials(h.Get(name))
			if !ok {
				if name == "Authorization" {
					return unauthorized
				}
				continue
			}
			if conf.boolean("hide_credentials") {
				x.Forward.Header.Del(name)
			}
			if cred = rt.basicAuths[user]; cred != nil {
				password = pass
				break
			}
		}
		if cred == nil || cred.Consumer == nil || cred.Consumer.ID == nil || cred.Password == nil ||
			*cred.Password != basicAuthHash(password, *cred.Consumer.ID) {
			return unauthorized
		}
		consumer := rt.consumers[*cred.Consumer.ID]
		if consumer == nil {
			return x.errorResponse(500, "An unexpected error occurred", nil)
		}
		setConsumer(x, consumer, cred, stringOf(cred.Username))
		return nil
	})
}

// basicAuthHash is how basic-auth stores a password: lower-case hex of sha1(password ..
// consumer_id) (kong/plugins/basic-auth/crypto.lua).
func basicAuthHash(password, consumerID string) string {
	sum := sha1.Sum([]byte(password + consumerID))
	return hex.EncodeToString(sum[:])
}

func basicCredentials(header string) (string, string, bool) {
	m := basicScheme.FindStringSubmatch(header)
	if m == nil {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(m[1]))
	if err != nil {
		return "", "", false
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok || user == "" {
		return "", "", false
	}
	return user, pass, true
}

func acl(x *Exchange, conf config) *Response {
	rt := x.runtime
	deny := conf.strings("deny")
	allow := conf.strings("allow")
	if x.Consumer == nil {
		if x.Credential != nil {
			return x.errorResponse(403, "You cannot consume this service", nil)
		}
		return x.errorResponse(401, "", nil)
	}
	groups := rt.acls[stringOf(x.Consumer.ID)]
	if len(groups) == 0 && len(deny) == 0 {
		if x.Credential != nil {
			return x.errorResponse(403, "You cannot consume this service", nil)
		}
		return x.errorResponse(401, "", nil)
	}
	in := func(list []string) bool {
		for _, g := range groups {
			for _, l := range list {
				if g == l {
					return true
				}
			}
		}
		return false
	}
	blocked := (len(deny) > 0 && in(deny)) || (len(deny) == 0 && !in(allow))
	if blocked {
		return x.errorResponse(403, "You cannot consume this service", nil)
	}
	if !conf.boolean("hide_groups_header") {
		x.Forward.Header.Set("X-Consumer-Groups", strings.Join(groups, ", "))
	}
	return nil
}

func stringOf(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// queryOf is the request's query as kong.request.get_query() gives it.
func queryOf(x *Exchange) url.Values {
	i := strings.IndexByte(x.Request.URI, '?')
	if i < 0 {
		return url.Values{}
	}
	q, _ := url.ParseQuery(x.Request.URI[i+1:])
	return q
}

// hasQueryValue reports whether the argument is sent with "=" (a bare "?apikey" is Lua's true,
// which key-auth does not take as a key).
func hasQueryValue(uri, name string) bool {
	i := strings.IndexByte(uri, '?')
	if i < 0 {
		return false
	}
	for _, part := range strings.Split(uri[i+1:], "&") {
		k, _, eq := strings.Cut(part, "=")
		if k, err := url.QueryUnescape(k); err == nil && k == name && eq {
			return true
		}
	}
	return false
}

// removeQueryArg is kong.service.request.clear_query_arg on the upstream request.
func removeQueryArg(x *Exchange, name string) {
	q, _ := url.ParseQuery(x.Forward.RawQuery)
	if _, ok := q[name]; !ok {
		return
	}
	q.Del(name)
	x.Forward.RawQuery = encodeSortedQuery(q)
}

// bodyArg reads a top-level argument of a JSON or form body.
func bodyArg(x *Exchange, name string) (string, bool) {
	if x.Body == nil {
		return "", false
	}
	body := x.Body()
	ct := x.Request.Header.Get("Content-Type")
	switch {
	case strings.Contains(ct, "application/json"):
		var m map[string]any
		if json.Unmarshal(body, &m) == nil {
			if s, ok := m[name].(string); ok {
				return s, true
			}
		}
	case strings.Contains(ct, "application/x-www-form-urlencoded"):
		q, _ := url.ParseQuery(string(body))
		if v, ok := q[name]; ok && len(v) == 1 {
			return v[0], true
		}
	}
	return "", false
}

func challengeHeader(challenge string) http.Header {
	h := http.Header{}
	h.Set("WWW-Authenticate", challenge)
	return h
}
