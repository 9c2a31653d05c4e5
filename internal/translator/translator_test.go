package translator

import (
	"context"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/manifest"
	"github.com/konductor/konductor/internal/store"
)

// The expected values are translation-rules.md's [G] examples, from KIC's own golden files: they
// prove compatibility with KIC, not only that the output agrees with itself.
func TestKICGoldenValues(t *testing.T) {
	m := goldenConfig(t, "single-service")
	svc := m["services"].([]any)[0].(map[string]any)
	assert.Equal(t, "foo-namespace.foo-svc.80", svc["name"])
	assert.Equal(t, "fe1e2edc-5479-52fe-b0f4-b90d8d5f83ba", svc["id"])
	assert.Equal(t, "foo-svc.foo-namespace.80.svc", svc["host"])
	route := svc["routes"].([]any)[0].(map[string]any)
	assert.Equal(t, "foo-namespace.foo.foo-svc.example.com.80", route["name"])
	assert.Equal(t, "3eee2c18-8fcc-5661-8f84-5c89adfa404f", route["id"])
	assert.Nil(t, route["protocols"], "KIC leaves protocols unset")
	assert.Equal(t, []any{"k8s-name:foo", "k8s-namespace:foo-namespace", "k8s-kind:Ingress",
		"k8s-uid:2d6a3f2e-0a4c-4b8e-9d0c-3a1b2c3d4e5f", "k8s-group:networking.k8s.io", "k8s-version:v1"}, route["tags"])

	m = goldenConfig(t, "multiple-ports")
	ss := m["services"].([]any)
	assert.Equal(t, "foo-namespace.foo-svc.8000", ss[0].(map[string]any)["name"])
	assert.Equal(t, "foo-namespace.foo-svc.80", ss[1].(map[string]any)["name"])

	m = goldenConfig(t, "ports-by-name")
	names := []any{}
	for _, s := range m["services"].([]any) {
		names = append(names, s.(map[string]any)["name"])
	}
	assert.Contains(t, names, "foo-namespace.foo-svc.http")

	m = goldenConfig(t, "hosts")
	routes := m["services"].([]any)[0].(map[string]any)["routes"].([]any)
	var rn []string
	for _, r := range routes {
		rn = append(rn, r.(map[string]any)["name"].(string))
	}
	assert.Equal(t, []string{"default.httpbin.httpbin._.example.com.80", "default.httpbin.httpbin..80", "default.httpbin-other.httpbin..80"}, rn)

	m = goldenConfig(t, "default-backend")
	for _, s := range m["services"].([]any) {
		s := s.(map[string]any)
		if s["name"] == "z.httpbin.80" {
			assert.Nil(t, s["path"], "default backend service has no path")
		}
	}

	m = goldenConfig(t, "regex-prefix")
	s := m["services"].([]any)[0].(map[string]any)
	assert.EqualValues(t, 80, s["port"], "unresolved port stays 80")
	paths := s["routes"].([]any)[0].(map[string]any)["paths"].([]any)
	assert.Equal(t, `~/foo/\d{3}`, paths[0])

	m = goldenConfig(t, "plugins")
	byID := map[string]map[string]any{}
	for _, p := range m["plugins"].([]any) {
		p := p.(map[string]any)
		byID[p["id"].(string)] = p
	}
	require.Contains(t, byID, "61a22b86-f859-5c8a-a23c-97b92b14b635", "correlation-id:route/default.httpbin.httpbin..80")
	assert.Equal(t, "default.httpbin.httpbin..80", byID["61a22b86-f859-5c8a-a23c-97b92b14b635"]["route"])
	var instanceNames []any
	for _, p := range byID {
		instanceNames = append(instanceNames, p["instance_name"])
	}
	assert.Contains(t, instanceNames, "example-21a1f5b5f")

	m = goldenConfig(t, "empty")
	assert.Equal(t, []any{map[string]any{"name": "kong"}}, m["upstreams"])
}

func loadAllTestdata(t testing.TB) []client.Object {
	var objs []client.Object
	ins, _ := filepath.Glob("testdata/*/in.yaml")
	for i, in := range ins {
		o, err := manifest.Load(in)
		require.NoError(t, err)
		// Cases reuse names; give each case its own namespace suffix.
		for _, x := range o {
			if x.GetNamespace() != "" {
				x.SetNamespace(x.GetNamespace() + "-" + string(rune('a'+i)))
			} else {
				x.SetName(x.GetName() + "-" + string(rune('a'+i)))
			}
		}
		objs = append(objs, o...)
	}
	return objs
}

func shuffle[T any](r *rand.Rand, s []T) []T {
	out := append([]T(nil), s...)
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// Translating the same objects twice, listed in different orders, gives the same bytes.
func TestDeterministicUnderShuffle(t *testing.T) {
	st, err := store.NewForObjects(loadAllTestdata(t), store.Options{})
	require.NoError(t, err)
	snap, err := st.Snapshot(context.Background())
	require.NoError(t, err)
	require.NotEmpty(t, snap.Ingresses)

	state, problems := Translate(snap, Options{})
	want, err := state.DeclarativeConfig()
	require.NoError(t, err)
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 5; i++ {
		s2 := *snap
		s2.Ingresses = shuffle(r, snap.Ingresses)
		s2.Services = shuffle(r, snap.Services)
		s2.EndpointSlices = shuffle(r, snap.EndpointSlices)
		s2.Secrets = shuffle(r, snap.Secrets)
		state2, problems2 := Translate(&s2, Options{})
		got, err := state2.DeclarativeConfig()
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
		require.Equal(t, problems, problems2)
	}
}

func TestNeverPanics(t *testing.T) {
	num := int32(80)
	pt := netv1.PathType("Bogus")
	snaps := []*store.Snapshot{
		nil,
		{},
		{Ingresses: []*netv1.Ingress{nil}, Services: []*corev1.Service{nil}, EndpointSlices: []*discoveryv1.EndpointSlice{nil}, Secrets: []*corev1.Secret{nil}},
		{
			Ingresses: []*netv1.Ingress{{
				ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "n", Annotations: map[string]string{
					annProtocols: ",,", annHeadersPrefix: "v", annHostAliases: "", annRegexPrefix: "", annSNIs: "",
					annHTTPSRedirectCode: "99999999999999999999999", annRegexPriority: "-99999999999999999999",
				}},
				Spec: netv1.IngressSpec{
					DefaultBackend: &netv1.IngressBackend{},
					TLS:            []netv1.IngressTLS{{}, {Hosts: []string{""}, SecretName: "s"}},
					Rules: []netv1.IngressRule{{}, {IngressRuleValue: netv1.IngressRuleValue{HTTP: &netv1.HTTPIngressRuleValue{
						Paths: []netv1.HTTPIngressPath{
							{},
							{PathType: &pt, Backend: netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: "s", Port: netv1.ServiceBackendPort{Number: -1}}}},
							{Path: "~", Backend: netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: "s"}}},
							{Path: "/x", Backend: netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: "e", Port: netv1.ServiceBackendPort{Name: "p"}}}},
						},
					}}}},
				},
			}},
			Services: []*corev1.Service{
				{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "n"}},
				{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "n"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName,
					Ports: []corev1.ServicePort{{Name: "p", TargetPort: intstr.FromString("p")}}}},
			},
			EndpointSlices: []*discoveryv1.EndpointSlice{{
				ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "n", Labels: map[string]string{discoveryv1.LabelServiceName: "s"}},
				Ports:      []discoveryv1.EndpointPort{{}, {Port: &num}},
				Endpoints:  []discoveryv1.Endpoint{{}, {Addresses: []string{""}}},
			}},
			Secrets: []*corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "n"}, Data: map[string][]byte{"tls.crt": nil}}},
		},
	}
	for _, s := range snaps {
		state, _ := Translate(s, Options{})
		_, err := state.DeclarativeConfig()
		require.NoError(t, err)
	}
}

func FuzzPathAndHost(f *testing.F) {
	for _, s := range []string{"/", "/~/(", "~", "//", "/%", "*.a", "a.*", "", "/a b", "/~/a{99999}"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, path, host string) {
		pt := netv1.PathTypeImplementationSpecific
		snap := &store.Snapshot{Ingresses: []*netv1.Ingress{{
			ObjectMeta: metav1.ObjectMeta{Name: "i", Namespace: "n", Annotations: map[string]string{annHostAliases: host, annHeadersPrefix + host: path}},
			Spec: netv1.IngressSpec{Rules: []netv1.IngressRule{{Host: host, IngressRuleValue: netv1.IngressRuleValue{HTTP: &netv1.HTTPIngressRuleValue{
				Paths: []netv1.HTTPIngressPath{{Path: path, PathType: &pt, Backend: netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: "s", Port: netv1.ServiceBackendPort{Number: 80}}}}},
			}}}}},
		}}}
		state, _ := Translate(snap, Options{})
		for _, s := range state.Services {
			for _, r := range s.Routes {
				for _, p := range r.Paths {
					assert.Empty(t, checkRoutePath(*p))
				}
				for _, h := range r.Hosts {
					assert.Empty(t, checkWildcardHost(*h, true))
				}
			}
		}
	})
}

func TestKongPaths(t *testing.T) {
	cases := []struct {
		in   string
		pt   netv1.PathType
		want []string
	}{
		{"/whatever", netv1.PathTypeExact, []string{"~/whatever$"}},
		{"/", netv1.PathTypeExact, []string{"~/$"}},
		{"/a/", netv1.PathTypeExact, []string{"~/a/$"}},
		{"/a.b", netv1.PathTypeExact, []string{"~/a.b$"}},
		{"/", netv1.PathTypePrefix, []string{"/"}},
		{"/internal", netv1.PathTypePrefix, []string{"/internal/", "~/internal$"}},
		{"/a/", netv1.PathTypePrefix, []string{"/a/", "~/a$"}},
		{"/.well-known/acme-challenge/yolo", netv1.PathTypeImplementationSpecific, []string{"/.well-known/acme-challenge/yolo"}},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, kongPaths(nil, normalizePath(c.in), c.pt), "%s %s", c.pt, c.in)
	}
	assert.Equal(t, "/", normalizePath(""))
	assert.Equal(t, "/a/b", normalizePath("//a///b"))
}

func TestApplyRegexPrefix(t *testing.T) {
	assert.Equal(t, `~/foo/\d{3}`, applyRegexPrefix(`/~/foo/\d{3}`, "/~", false))
	assert.Equal(t, `/x/~/y`, applyRegexPrefix(`/x/~/y`, "/~", false))
	assert.Equal(t, `~/a/~/b`, applyRegexPrefix(`/~/a/~/b`, "/~", false), "only the first occurrence")
	assert.Equal(t, `~/users/\d+`, applyRegexPrefix(`/users/\d+`, "/~", true))
	assert.Equal(t, `/users/1`, applyRegexPrefix(`/users/1`, "/~", true))
	assert.Equal(t, `~/a$`, applyRegexPrefix(`~/a$`, "/~", true))
}

func TestCheckRoutePath(t *testing.T) {
	ok := []string{"/", "/a/b", "~/a$", `~/(?=x)\1`, "~/a++", "/a%20b", "/a:b@c", "~/a{1000}"}
	for _, p := range ok {
		assert.Empty(t, checkRoutePath(p), p)
	}
	bad := map[string]string{
		"a":          "should start with",
		"~a":         "should start with",
		"/a//b":      "empty segments",
		"~/(":        "missing closing parenthesis",
		"~/[":        "missing terminating ]",
		"~/a{70000}": "number too big",
		"/a b":       "RFC 3986",
		"/%zz":       "url-encoded",
		"~/a|*b":     "quantifier does not follow",
	}
	for p, want := range bad {
		assert.Contains(t, checkRoutePath(p), want, p)
	}
}

func TestCheckHosts(t *testing.T) {
	for _, h := range []string{"example.com", "*.example.com", "example.*", "a_b.example.com", "example.com:8080", "10.0.0.1", "[::1]:80"} {
		assert.Empty(t, checkWildcardHost(h, true), h)
	}
	for _, h := range []string{"a.*.com", "*.*.com", "bad host", "ex*ample.com", "example.com:99999", "-a.com", ""} {
		assert.NotEmpty(t, checkWildcardHost(h, true), h)
	}
	assert.NotEmpty(t, checkSNI("10.0.0.1"))
	assert.NotEmpty(t, checkSNI("a.com:80"))
	assert.Empty(t, checkSNI("*.a.com"))
}

func TestFindPort(t *testing.T) {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Name: "http", Port: 80, TargetPort: intstr.FromString("web")},
		{Name: "admin", Port: 8000, TargetPort: intstr.FromInt32(9000)},
	}}}
	p, err := findPort(svc, netv1.ServiceBackendPort{Number: 8000})
	require.NoError(t, err)
	assert.Equal(t, "admin", p.Name)
	p, err = findPort(svc, netv1.ServiceBackendPort{Name: "web"})
	require.NoError(t, err)
	assert.Equal(t, "http", p.Name, "by targetPort name")
	_, err = findPort(svc, netv1.ServiceBackendPort{Number: 1})
	assert.EqualError(t, err, "can't find port for backend kubernetes service: no suitable port found")
	_, err = findPort(svc, netv1.ServiceBackendPort{})
	assert.EqualError(t, err, "in implicit mode, service must have exactly 1 port, has 2")
	ext := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName}}
	p, err = findPort(ext, netv1.ServiceBackendPort{Number: 443})
	require.NoError(t, err)
	assert.EqualValues(t, 443, p.Port)
	_, err = findPort(ext, netv1.ServiceBackendPort{Name: "x"})
	assert.EqualError(t, err, "rules with an ExternalName service must specify numeric ports")
}

func TestProblemString(t *testing.T) {
	p := Problem{Object: kongstate.ObjectRef{Kind: "Ingress", Namespace: "default", Name: "foo"}, Field: "spec.rules[0].http.paths[1].path", Message: `invalid regex "~/(": missing closing parenthesis`}
	assert.Equal(t, `Ingress default/foo: spec.rules[0].http.paths[1].path: invalid regex "~/(": missing closing parenthesis`, p.String())
	p.Field = ""
	assert.Equal(t, `Ingress default/foo: invalid regex "~/(": missing closing parenthesis`, p.String())
	assert.True(t, fieldLess("spec.rules[2].x", "spec.rules[10].x"))
	assert.False(t, fieldLess("spec.rules[10].x", "spec.rules[2].x"))
}

func TestRouteOverridesForceSSL(t *testing.T) {
	b := newBuilder(&store.Snapshot{}, Options{}, nil)
	for _, c := range []struct {
		protocols string
		want      []string
	}{
		{"", []string{"https"}},
		// translation-rules.md §10.1 applies a valid konghq.com/protocols after force-ssl-redirect,
		// so the annotation's protocols win; only the status code remains.
		{"grpc", []string{"grpc"}},
		{"grpc,http", []string{"http", "https"}}, // grpc together with http normalises
		{"http,bogus", []string{"https"}},        // invalid: the annotation is not applied over force-ssl
	} {
		ann := map[string]string{annForceSSLRedirect: "true"}
		if c.protocols != "" {
			ann[annProtocols] = c.protocols
		}
		ro, _ := b.routeAnnotations(&netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Annotations: ann}}, gvkIngress)
		r := b.newRoute(&netv1.Ingress{}, ro, "", c.protocols, "r"+strings.ReplaceAll(c.protocols, ",", "-"), "")
		require.NotNil(t, r)
		var got []string
		for _, p := range r.Protocols {
			got = append(got, *p)
		}
		assert.Equal(t, c.want, got, c.protocols)
		assert.Equal(t, 302, *r.HTTPSRedirectStatusCode)
	}
}

func TestRewriteTemplate(t *testing.T) {
	for _, tc := range []struct{ in, out, err string }{
		{"", "/", ""},
		{"/api/$1/x/$12", "/api/$(uri_captures[1])/x/$(uri_captures[12])", ""},
		{`/price/\$5`, "/price/$5", ""},
		{`/a\b`, "", "unexpected b at pos 3"},
		{"/a$b", "", "unexpected b at pos 3"},
		{"/a$", "", "unexpected end of string"},
		{`/a\`, "", "unexpected end of string"},
	} {
		got, err := rewriteTemplate(tc.in)
		if tc.err != "" {
			require.EqualError(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.out, got, tc.in)
	}
}
