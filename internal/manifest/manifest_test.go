package manifest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
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
