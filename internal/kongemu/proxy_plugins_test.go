package kongemu

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// Each plugin konductor emits, through the proxy, against the Kong source it follows
// (kong/plugins/<name>/, at Kong 22246ef28c).

const authConfig = `{"_format_version":"3.0",
 "consumers":[
  {"username":"alice","custom_id":"a-1","keyauth_credentials":[{"key":"alice-key"}],
   "basicauth_credentials":[{"username":"alice","password":"secret"}],"acls":[{"group":"admins"}]},
  {"username":"bob","keyauth_credentials":[{"key":"bob-key"}],"acls":[{"group":"users"}]},
  {"username":"anon"}],
 "services":[{"name":"s","host":"10.1.0.1","port":8080,"routes":[
  {"name":"key","paths":["/key"],"plugins":[{"name":"key-auth","config":{"hide_credentials":true}}]},
  {"name":"basic","paths":["/basic"],"plugins":[{"name":"basic-auth"}]},
  {"name":"acl","paths":["/acl"],"plugins":[{"name":"key-auth"},{"name":"acl","config":{"allow":["admins"]}}]},
  {"name":"either","paths":["/either"],"plugins":[
    {"name":"key-auth","config":{"anonymous":"anon"}},{"name":"basic-auth","config":{"anonymous":"anon"}}]}]}]}`

// key-auth: handler.lua do_authentication and set_consumer; basic-auth: access.lua; acl:
// handler.lua.
func TestProxyAuthenticationPlugins(t *testing.T) {
	_, p := proxyWith(t, authConfig, map[string]string{"10.1.0.1:8080": "echo"})
	res, body := send(t, p, "GET", "/key", nil)
	require.Equal(t, 401, res.StatusCode)
	require.Equal(t, "Key", res.Header.Get("WWW-Authenticate"))
	require.Contains(t, string(body), `"message":"No API key found in request"`)
	res, body = send(t, p, "GET", "/key", map[string]string{"apikey": "wrong"})
	require.Equal(t, 401, res.StatusCode)
	require.Contains(t, string(body), `"message":"Unauthorized"`)

	res, body = send(t, p, "GET", "/key?apikey=alice-key&x=1", nil)
	require.Equal(t, 200, res.StatusCode, "%s", body)
	echo := echoOf(t, body)
	require.Equal(t, "alice", echo.Headers["X-Consumer-Username"][0])
	require.Equal(t, "a-1", echo.Headers["X-Consumer-Custom-Id"][0])
	require.NotEmpty(t, echo.Headers["X-Credential-Identifier"])
	require.Equal(t, "/?x=1", echo.Path, "hide_credentials takes the key out of the query (and strip_path the /key)")
	res, body = send(t, p, "GET", "/key", map[string]string{"apikey": "alice-key"})
	require.Equal(t, 200, res.StatusCode)
	require.Empty(t, echoOf(t, body).Headers["Apikey"], "hide_credentials takes the header out")

	res, body = send(t, p, "GET", "/basic", nil)
	require.Equal(t, 401, res.StatusCode)
	require.Equal(t, `Basic realm="service"`, res.Header.Get("WWW-Authenticate"))
	res, _ = send(t, p, "GET", "/basic", map[string]string{"Authorization": basic("alice", "nope")})
	require.Equal(t, 401, res.StatusCode)
	res, body = send(t, p, "GET", "/basic", map[string]string{"Authorization": basic("alice", "secret")})
	require.Equal(t, 200, res.StatusCode, "%s", body)
	require.Equal(t, "alice", echoOf(t, body).Headers["X-Credential-Identifier"][0], "basic-auth's identifier is the username")

	res, body = send(t, p, "GET", "/acl", map[string]string{"apikey": "bob-key"})
	require.Equal(t, 403, res.StatusCode)
	require.Contains(t, string(body), "You cannot consume this service")
	res, body = send(t, p, "GET", "/acl", map[string]string{"apikey": "alice-key"})
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, "admins", echoOf(t, body).Headers["X-Consumer-Groups"][0])
	res, _ = send(t, p, "GET", "/acl", nil)
	require.Equal(t, 401, res.StatusCode, "key-auth answers before acl runs")

	// Logical OR with anonymous: no credential passes as the anonymous consumer.
	res, body = send(t, p, "GET", "/either", nil)
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, "anon", echoOf(t, body).Headers["X-Consumer-Username"][0])
	require.Equal(t, "true", echoOf(t, body).Headers["X-Anonymous-Consumer"][0])
	res, body = send(t, p, "GET", "/either", map[string]string{"Authorization": basic("alice", "secret")})
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, "alice", echoOf(t, body).Headers["X-Consumer-Username"][0])
}

const transformConfig = `{"_format_version":"3.0",
 "services":[{"name":"s","host":"10.1.0.1","port":8080,"routes":[
  {"name":"rt","paths":["/rt"],"plugins":[{"name":"request-transformer","config":{
    "remove":{"headers":["x-drop"],"querystring":["drop"]},
    "rename":{"headers":["x-old:x-new"]},
    "replace":{"headers":["x-set:replaced"]},
    "add":{"headers":["x-added:yes","x-set:not-added"],"querystring":["q:1"]},
    "append":{"headers":["x-multi:two"]}}}]},
  {"name":"rewrite","paths":["~/old/(?<rest>.*)$"],"strip_path":false,"plugins":[{"name":"request-transformer","config":{
    "replace":{"uri":"/new/$(uri_captures[\"rest\"] == nil and \"\" or uri_captures[\"rest\"])"}}}]},
  {"name":"prefix","paths":["~/prefix(/.*)?$"],"strip_path":false,"plugins":[{"name":"request-transformer","config":{
    "replace":{"uri":"$(uri_captures[1] == nil and \"/\" or uri_captures[1])"}}}]},
  {"name":"resp","paths":["/resp"],"plugins":[{"name":"response-transformer","config":{
    "remove":{"headers":["x-content-type-options"]},
    "add":{"headers":["x-resp:added"],"json":["extra:true"],"json_types":["boolean"]}}}]}]}]}`

// request-transformer: access.lua (order remove, rename, replace, add, append; replace.uri
// templates with uri_captures); response-transformer: header_transformer.lua and
// body_transformer.lua.
func TestProxyTransformerPlugins(t *testing.T) {
	_, p := proxyWith(t, transformConfig, map[string]string{"10.1.0.1:8080": "echo"})
	res, body := send(t, p, "GET", "/rt?drop=1&keep=2", map[string]string{"X-Drop": "a", "X-Old": "b", "X-Set": "c", "X-Multi": "one"})
	require.Equal(t, 200, res.StatusCode, "%s", body)
	h := echoOf(t, body).Headers
	require.Empty(t, h["X-Drop"])
	require.Empty(t, h["X-Old"])
	require.Equal(t, []string{"b"}, h["X-New"])
	require.Equal(t, []string{"replaced"}, h["X-Set"], "add does not overwrite; replace does")
	require.Equal(t, []string{"yes"}, h["X-Added"])
	require.Equal(t, []string{"one", "two"}, h["X-Multi"])
	require.Equal(t, "/?keep=2&q=1", echoOf(t, body).Path, "strip_path (true by default) and the query re-encoded with sorted keys")

	_, body = send(t, p, "GET", "/old/a/b?z=1", nil)
	require.Equal(t, "/new/a/b?z=1", echoOf(t, body).Path)
	_, body = send(t, p, "GET", "/prefix", nil)
	require.Equal(t, "/", echoOf(t, body).Path)
	_, body = send(t, p, "GET", "/prefix/x/y", nil)
	require.Equal(t, "/x/y", echoOf(t, body).Path)

	res, body = send(t, p, "GET", "/resp", nil)
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, "added", res.Header.Get("X-Resp"))
	require.Empty(t, res.Header.Get("X-Content-Type-Options"))
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	require.Equal(t, true, m["extra"])
	require.Equal(t, "echo", m["pod"])
}

const answersConfig = `{"_format_version":"3.0",
 "services":[{"name":"s","host":"10.1.0.1","port":8080,"routes":[
  {"name":"term","paths":["/term"],"plugins":[{"name":"request-termination","config":{"status_code":403,"message":"go away"}}]},
  {"name":"body","paths":["/body"],"plugins":[{"name":"request-termination","config":{"status_code":200,"body":"hi","content_type":"text/plain"}}]},
  {"name":"trig","paths":["/trig"],"plugins":[{"name":"request-termination","config":{"trigger":"x-stop"}}]},
  {"name":"echo","paths":["/echo"],"plugins":[{"name":"request-termination","config":{"status_code":200,"echo":true}}]},
  {"name":"redir","paths":["/redir"],"plugins":[{"name":"redirect","config":{"location":"https://example.com/landing?a=1","keep_incoming_path":true,"status_code":302}}]},
  {"name":"cors","paths":["/cors"],"plugins":[{"name":"cors","config":{"origins":["https://a.example.com","https://b\\.example\\.(com|org)"],"credentials":true,"max_age":60,"exposed_headers":["x-e"]}}]},
  {"name":"ip","paths":["/ip"],"plugins":[{"name":"ip-restriction","config":{"allow":["10.0.0.0/24"],"deny":["10.0.0.7"]}}]},
  {"name":"ip2","paths":["/ip2"],"plugins":[{"name":"ip-restriction","config":{"allow":["10.0.0.0/24"]}}]}]}]}`

// request-termination, redirect, cors and ip-restriction handler.lua.
func TestProxyAnsweringPlugins(t *testing.T) {
	_, p := proxyWith(t, answersConfig, map[string]string{"10.1.0.1:8080": "echo"})
	res, body := send(t, p, "GET", "/term", nil)
	require.Equal(t, 403, res.StatusCode)
	require.JSONEq(t, `{"message":"go away"}`, string(body), "kong.response.exit: no request_id")
	res, body = send(t, p, "GET", "/body", nil)
	require.Equal(t, "hi", string(body))
	require.Equal(t, "text/plain", res.Header.Get("Content-Type"))
	res, _ = send(t, p, "GET", "/trig", nil)
	require.Equal(t, 200, res.StatusCode, "no trigger: proxied")
	res, body = send(t, p, "GET", "/trig", map[string]string{"X-Stop": "1"})
	require.Equal(t, 503, res.StatusCode)
	require.JSONEq(t, `{"message":"Service unavailable"}`, string(body))
	res, body = send(t, p, "GET", "/echo?a=b", map[string]string{"X-Probe": "1"})
	require.Equal(t, 200, res.StatusCode)
	var echo map[string]any
	require.NoError(t, json.Unmarshal(body, &echo))
	require.Equal(t, "/echo", obj(echo["request"])["path"])
	require.Equal(t, "1", obj(obj(echo["request"])["headers"])["x-probe"])

	res, body = send(t, p, "GET", "/redir/x?q=2", nil)
	require.Equal(t, 302, res.StatusCode)
	require.Equal(t, "https://example.com/redir/x?q=2", res.Header.Get("Location"))
	require.Equal(t, "redirecting", string(body))

	// CORS preflight answered by Kong; an actual request gets the headers on its response.
	res, _ = send(t, p, "OPTIONS", "/cors", map[string]string{"Origin": "https://b.example.org", "Access-Control-Request-Method": "PUT"})
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, "https://b.example.org", res.Header.Get("Access-Control-Allow-Origin"))
	require.Equal(t, "true", res.Header.Get("Access-Control-Allow-Credentials"))
	require.Equal(t, "60", res.Header.Get("Access-Control-Max-Age"))
	require.Equal(t, "GET,HEAD,PUT,PATCH,POST,DELETE,OPTIONS,TRACE,CONNECT", res.Header.Get("Access-Control-Allow-Methods"))
	res, _ = send(t, p, "GET", "/cors", map[string]string{"Origin": "https://evil.example.net"})
	require.Equal(t, 200, res.StatusCode)
	require.Empty(t, res.Header.Get("Access-Control-Allow-Origin"))
	res, _ = send(t, p, "GET", "/cors", map[string]string{"Origin": "https://a.example.com"})
	require.Equal(t, "https://a.example.com", res.Header.Get("Access-Control-Allow-Origin"))
	require.Equal(t, "x-e", res.Header.Get("Access-Control-Expose-Headers"))
	require.Equal(t, "Origin", res.Header.Get("Vary"))

	res, body = send(t, p, "GET", "/ip", nil)
	require.Equal(t, 403, res.StatusCode, "deny wins over allow")
	require.Contains(t, string(body), "IP address not allowed: 10.0.0.7")
	res, _ = send(t, p, "GET", "/ip2", nil)
	require.Equal(t, 200, res.StatusCode)
}

// A plugin the proxy does not run is passed through and counted.
func TestProxyCountsUnmodelledPlugins(t *testing.T) {
	_, p := proxyWith(t, `{"_format_version":"3.0","services":[{"name":"s","host":"10.1.0.1","port":8080,"routes":[
  {"paths":["/"],"plugins":[{"name":"rate-limiting","config":{"minute":5,"policy":"local"}}]}]}]}`, map[string]string{"10.1.0.1:8080": "echo"})
	for i := 0; i < 3; i++ {
		res, _ := send(t, p, "GET", "/", nil)
		require.Equal(t, 200, res.StatusCode)
	}
	require.Equal(t, map[string]int64{"rate-limiting": 3}, p.Unmodelled())
}
