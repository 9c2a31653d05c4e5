package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/konductor/konductor/internal/explain"
)

var hostsCase = filepath.Join("..", "..", "internal", "translator", "testdata", "hosts", "in.yaml")

func explainCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := runExplain(context.Background(), args, &out)
	return out.String(), err
}

// explain -f: flags before and after the URL, as kubectl takes them; text, JSON and YAML say
// the same.
func TestExplainManifests(t *testing.T) {
	text, err := explainCmd(t, "http://a.example.com/wild/x", "-f", hostsCase, "-X", "POST", "-H", "X-Team: a")
	require.NoError(t, err)
	require.Contains(t, text, "Request: POST http://a.example.com/wild/x from 127.0.0.1, router traditional_compatible\n  X-Team: a\n")
	require.Contains(t, text, "Route: default.httpbin.httpbin._.example.com.80 <- Ingress default/httpbin spec.rules[")

	js, err := explainCmd(t, "-f", hostsCase, "-o", "json", "-X", "POST", "http://a.example.com/wild/x", "-H", "X-Team: a")
	require.NoError(t, err)
	var x explain.Explanation
	require.NoError(t, json.Unmarshal([]byte(js), &x))
	require.Equal(t, "default.httpbin.httpbin._.example.com.80", x.Route.Name)
	require.Equal(t, "Ingress", x.Route.Source.Kind)
	require.Equal(t, []string{"a"}, x.Request.Header["X-Team"])
	require.Contains(t, js, `"value": "0x`, "a priority is hex: beyond the integers JSON readers keep")

	y, err := explainCmd(t, "-f", hostsCase, "-o", "yaml", "-X", "POST", "-H", "X-Team: a", "http://a.example.com/wild/x")
	require.NoError(t, err)
	var fromYAML explain.Explanation
	require.NoError(t, sigsyaml.Unmarshal([]byte(y), &fromYAML))
	require.Equal(t, x, fromYAML)
}

// Bad input: an error naming what is wrong.
func TestExplainBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-f", hostsCase}, "give one request URL"},
		{[]string{"-f", hostsCase, "http://a/", "http://b/"}, "not 2 arguments"},
		{[]string{"-f", hostsCase, "example.com/x"}, "absolute http:// or https:// URL"},
		{[]string{"-f", hostsCase, "-o", "xml", "http://a/"}, "--output must be text, json or yaml"},
		{[]string{"-f", hostsCase, "-H", "no colon", "http://a/"}, "a header is 'Name: value'"},
		{[]string{"-f", hostsCase, "--router-flavor", "atc", "http://a/"}, "--router-flavor must be"},
		{[]string{"-f", hostsCase, "--from-controller", "http://x", "http://a/"}, "give one"},
		{[]string{"-f", "/no/such/file.yaml", "http://a/"}, "/no/such/file.yaml"},
		{[]string{"--from-controller", "localhost:1", "http://a/"}, "give the diagnostics server's URL"},
		{[]string{"-f", hostsCase, "--all-conflicts", "http://a/"}, "--all-conflicts takes no request URL"},
	} {
		_, err := explainCmd(t, c.args...)
		require.ErrorContains(t, err, c.want, "%v", c.args)
	}
}

// Without -f or --from-controller the cluster is read; without a kubeconfig that is an error
// naming it, not a hang.
func TestExplainWithoutACluster(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	_, err := explainCmd(t, "http://a.example.com/")
	require.ErrorContains(t, err, "kubeconfig")
}

// --from-controller explains the configuration the controller's diagnostics server serves (KIC's
// {"hash", "config"} dump), says so when it has none yet, and, when its fallback configuration
// is in force, names the objects it left out whose routes (in the configuration Kong refused)
// would have taken the request.
func TestExplainFromController(t *testing.T) {
	dump := func(manifests string) string {
		var translated bytes.Buffer
		translateStderr = &bytes.Buffer{}
		t.Cleanup(func() { translateStderr = os.Stderr })
		require.NoError(t, runTranslate(context.Background(), []string{"-f", manifests, "-o", "json"}, &translated))
		return `{"hash":"00","config":` + strings.TrimSpace(translated.String()) + `}`
	}
	broken := filepath.Join(t.TempDir(), "broken.yaml")
	require.NoError(t, os.WriteFile(broken, []byte(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: broken, namespace: default, uid: 11111111-1111-4111-8111-111111111199}
spec:
  ingressClassName: kong
  rules:
  - host: broken.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
`), 0o644))
	served := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := served[r.URL.Path]
		if !ok {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	_, err := explainCmd(t, "--from-controller", srv.URL, "http://a.example.com/wild/x")
	require.ErrorContains(t, err, "has no configuration yet")
	served["/debug/config/successful"] = dump(hostsCase)
	fromController, err := explainCmd(t, "--from-controller", srv.URL, "http://a.example.com/wild/x")
	require.NoError(t, err)
	require.Contains(t, fromController, "Route: default.httpbin.httpbin._.example.com.80 <- Ingress default/httpbin\n",
		"the dump has the tags but not the objects: no rule and path index")
	fromManifests, err := explainCmd(t, "-f", hostsCase, "http://a.example.com/wild/x")
	require.NoError(t, err)
	// The same route, service, upstream request and losers as from the manifests, less the
	// parts of objects.
	cut := func(s string) string { return regexp.MustCompile(` spec\.rules\S*`).ReplaceAllString(s, "") }
	require.Equal(t, cut(fromManifests), cut(fromController))

	served["/debug/config/fallback"] = `{"status":"triggered","brokenObjects":[{"group":"networking.k8s.io","kind":"Ingress","namespace":"default","name":"broken","id":"x"}]}`
	served["/debug/config/failed"] = dump(broken)
	x, err := explainCmd(t, "--from-controller", srv.URL, "http://broken.example.com/a", "-o", "json")
	require.NoError(t, err)
	var got explain.Explanation
	require.NoError(t, json.Unmarshal([]byte(x), &got))
	require.Len(t, got.LeftOut, 1)
	require.Equal(t, "Ingress default/broken", got.LeftOut[0].Source.String())
	require.Contains(t, got.LeftOut[0].Problems[0], "left out by the fallback configuration: Kong refused its entities")
	x, err = explainCmd(t, "--from-controller", srv.URL, "http://elsewhere.example.com/a", "-o", "json")
	require.NoError(t, err)
	got = explain.Explanation{}
	require.NoError(t, json.Unmarshal([]byte(x), &got))
	require.Empty(t, got.LeftOut, "the broken Ingress's routes do not take this one")
}

// --all-conflicts: two tenants' Ingresses share a host, and one Ingress repeats another.
func TestExplainAllConflicts(t *testing.T) {
	ing := func(ns, name, path string) string {
		return "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: " + name + ", namespace: " + ns + "}\n" +
			"spec:\n  ingressClassName: kong\n  rules:\n  - host: shop.example.com\n    http:\n      paths:\n" +
			"      - {path: " + path + ", pathType: ImplementationSpecific, backend: {service: {name: web, port: {number: 80}}}}\n---\n"
	}
	svc := func(ns string) string {
		return "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: " + ns + "}\nspec: {ports: [{port: 80}]}\n---\n"
	}
	in := filepath.Join(t.TempDir(), "in.yaml")
	require.NoError(t, os.WriteFile(in, []byte(svc("team-a")+svc("team-b")+ing("team-a", "cart", "/cart")+ing("team-b", "cart", "/cart")+
		ing("team-b", "api", "/api")), 0o644))
	text, err := explainCmd(t, "--all-conflicts", "-f", in)
	require.NoError(t, err)
	js, err := explainCmd(t, "-f", in, "--all-conflicts", "-o", "json")
	require.NoError(t, err)
	var c explain.Conflicts
	require.NoError(t, json.Unmarshal([]byte(js), &c))
	require.Len(t, c.SharedHosts, 1)
	require.Equal(t, []string{"team-a", "team-b"}, c.SharedHosts[0].Namespaces)
	require.Contains(t, text, "  shop.example.com: namespaces team-a, team-b\n")
	require.Len(t, c.Shadowed, 1, "one of the two /cart routes can never win")
	require.Contains(t, c.Shadowed[0].Route.Name, ".cart.web.shop.example.com.80")
	require.Contains(t, text, "    shadowed by ")
}

// docs/explain.md's commands, run from the repository's root, print what the page shows.
func TestExplainDoc(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "explain.md"))
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?s)```console\n\\$ konductor ([^\n]*)\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	require.GreaterOrEqual(t, len(blocks), 3)
	t.Chdir(filepath.Join("..", ".."))
	for _, b := range blocks {
		var out bytes.Buffer
		require.NoError(t, dispatch(context.Background(), strings.Fields(b[1]), &out, &out), b[1])
		require.Equal(t, b[2], out.String(), "konductor %s", b[1])
	}
}
