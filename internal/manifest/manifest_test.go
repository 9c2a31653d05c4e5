package manifest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

func TestLoadDirectoryRecursiveSortedMultiDoc(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "b/svc.yml", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80}]}\n")
	write(t, dir, "a.yaml", `# comment only document
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: kong}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: i, namespace: ns}
---
`)
	write(t, dir, "c.json", `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}]}`)
	write(t, dir, "ignored.txt", "not yaml")
	objs, err := Load(dir)
	require.NoError(t, err)
	require.Len(t, objs, 4)
	assert.IsType(t, &netv1.IngressClass{}, objs[0])
	assert.Equal(t, "", objs[0].GetNamespace(), "cluster-scoped")
	assert.IsType(t, &netv1.Ingress{}, objs[1])
	assert.Equal(t, "ns", objs[1].GetNamespace())
	assert.IsType(t, &corev1.Service{}, objs[2])
	assert.Equal(t, "default", objs[2].GetNamespace(), "namespace defaults as kubectl does")
	assert.IsType(t, &corev1.Secret{}, objs[3])
	assert.Equal(t, "Service", objs[2].GetObjectKind().GroupVersionKind().Kind)
}

// Cluster-scoped kinds keep no namespace: a GatewayClass given "default" was a different
// object from the one its Gateways name (translation records Gateway -> GatewayClass).
func TestLoadClusterScopedKindsHaveNoNamespace(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.yaml", `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: kong}
spec: {controllerName: konghq.com/kic-gateway-controller}
---
apiVersion: configuration.konghq.com/v1
kind: KongClusterPlugin
metadata: {name: p}
plugin: key-auth
`)
	objs, err := Load(dir)
	require.NoError(t, err)
	require.Len(t, objs, 2)
	for _, o := range objs {
		assert.Empty(t, o.GetNamespace(), o.GetObjectKind().GroupVersionKind().Kind)
	}
}

// Kinds konductor does not read are skipped with one line each, never a failure: a
// Deployment (a kind the scheme knows) and a Widget (one it does not).
func TestLoadSkipsOtherKinds(t *testing.T) {
	p := write(t, t.TempDir(), "mixed.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: a}\n---\n"+
		"apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\n"+
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: ns}\n")
	l, err := LoadAll(p)
	require.NoError(t, err)
	require.Len(t, l.Objects, 1)
	assert.IsType(t, &corev1.Service{}, l.Objects[0])
	require.Len(t, l.Skipped, 2)
	assert.Contains(t, l.Skipped[0], `document 1: unknown kind "Widget"`)
	assert.Contains(t, l.Skipped[1], "Deployment ns/d: konductor does not read this kind; skipped")
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]struct{ body, want string }{
		"unknown-field.yaml": {"apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: {portz: []}\n", `unknown-field.yaml: document 0: `},
		"not-object.yaml":    {"just: data\n", `not-object.yaml: document 0: not a Kubernetes object`},
		"bad-yaml.yaml":      {"apiVersion: v1\nkind: [\n", `bad-yaml.yaml: document 0:`},
		"dup.yaml":           {"apiVersion: v1\nkind: Service\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: default}\n", `Service default/a is also defined in`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p := write(t, dir, name, c.body)
			_, err := Load(p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	_, err := Load(filepath.Join(dir, "missing.yaml"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing.yaml")
}

// TCPRoute, UDPRoute, TLSRoute at v1alpha2 and BackendTLSPolicy at v1alpha3 (the versions KIC
// 3.5 reads) are read and converted to the v1 type the store and translation read, with v1's
// TypeMeta; a kind at a version konductor does not read is still skipped, and the same object
// at two versions is one object.
func TestLoadConvertsOlderGatewayAPIVersions(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "alpha.yaml", `apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TCPRoute
metadata: {name: tcp}
spec:
  parentRefs: [{name: gw, sectionName: tcp}]
  rules:
  - backendRefs: [{name: echo, port: 1025}]
  - name: second
    backendRefs: [{name: echo2, port: 1026}]
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: UDPRoute
metadata: {name: udp, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules: [{backendRefs: [{name: dns, port: 53}]}]
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TLSRoute
metadata: {name: tls}
spec:
  parentRefs: [{name: gw}]
  hostnames: [tls.example.com]
  rules: [{backendRefs: [{name: echo, port: 443}]}]
---
apiVersion: gateway.networking.k8s.io/v1alpha3
kind: BackendTLSPolicy
metadata: {name: btls}
spec:
  targetRefs: [{group: "", kind: Service, name: echo}]
  validation:
    caCertificateRefs: [{group: "", kind: ConfigMap, name: ca}]
    hostname: echo.example.com
    subjectAltNames: [{type: Hostname, hostname: alt.example.com}]
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: GRPCRoute
metadata: {name: old-grpc}
spec: {}
`)
	l, err := LoadAll(p)
	require.NoError(t, err)
	require.Len(t, l.Objects, 4)
	tcp, ok := l.Objects[0].(*gatewayv1.TCPRoute)
	require.True(t, ok, "%T", l.Objects[0])
	assert.Equal(t, gatewayv1.SchemeGroupVersion.WithKind("TCPRoute"), tcp.GroupVersionKind())
	assert.Equal(t, "default", tcp.Namespace)
	require.Len(t, tcp.Spec.Rules, 2)
	assert.Equal(t, gatewayv1.ObjectName("echo2"), tcp.Spec.Rules[1].BackendRefs[0].Name)
	assert.Equal(t, gatewayv1.SectionName("tcp"), *tcp.Spec.ParentRefs[0].SectionName)
	udp, ok := l.Objects[1].(*gatewayv1.UDPRoute)
	require.True(t, ok, "%T", l.Objects[1])
	assert.Equal(t, "ns", udp.Namespace)
	tls, ok := l.Objects[2].(*gatewayv1.TLSRoute)
	require.True(t, ok, "%T", l.Objects[2])
	assert.Equal(t, []gatewayv1.Hostname{"tls.example.com"}, tls.Spec.Hostnames)
	btls, ok := l.Objects[3].(*gatewayv1.BackendTLSPolicy)
	require.True(t, ok, "%T", l.Objects[3])
	assert.Equal(t, gatewayv1.SchemeGroupVersion.WithKind("BackendTLSPolicy"), btls.GroupVersionKind())
	assert.Equal(t, gatewayv1.PreciseHostname("echo.example.com"), btls.Spec.Validation.Hostname)
	require.Len(t, btls.Spec.Validation.SubjectAltNames, 1)
	require.Len(t, l.Skipped, 1)
	assert.Contains(t, l.Skipped[0], "GRPCRoute default/old-grpc: konductor does not read GRPCRoute at v1alpha2 (versions read: v1); skipped")

	// The same route at v1alpha2 and at v1 is one object defined twice.
	dup := write(t, dir, "dup.yaml", "apiVersion: gateway.networking.k8s.io/v1alpha2\nkind: TCPRoute\nmetadata: {name: t}\nspec: {rules: []}\n---\n"+
		"apiVersion: gateway.networking.k8s.io/v1\nkind: TCPRoute\nmetadata: {name: t}\nspec: {rules: []}\n")
	_, err = Load(dup)
	require.ErrorContains(t, err, "TCPRoute.gateway.networking.k8s.io default/t is also defined in")

	// Unknown fields of the older version are errors, as for every kind.
	bad := write(t, dir, "bad.yaml", "apiVersion: gateway.networking.k8s.io/v1alpha2\nkind: TCPRoute\nmetadata: {name: t}\nspec: {rulez: []}\n")
	_, err = Load(bad)
	require.ErrorContains(t, err, "bad.yaml: document 0:")
}
