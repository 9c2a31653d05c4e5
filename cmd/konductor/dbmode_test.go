package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/dataplane/dbmode"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/manifest"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

const diffManifest = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: foo, namespace: foo-namespace, uid: 2d6a3f2e-0a4c-4b8e-9d0c-3a1b2c3d4e5f}
spec:
  ingressClassName: kong
  rules:
  - host: example.com
    http:
      paths:
      - {path: PATH, pathType: Prefix, backend: {service: {name: foo-svc, port: {number: 80}}}}
---
apiVersion: v1
kind: Service
metadata: {name: foo-svc, namespace: foo-namespace, uid: 6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f}
spec:
  ports: [{port: 80, targetPort: 8080, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: foo-svc-abc12
  namespace: foo-namespace
  labels: {kubernetes.io/service-name: foo-svc}
addressType: IPv4
ports: [{port: 8080, protocol: TCP}]
endpoints:
- addresses: [10.0.0.1]
  conditions: {ready: true}
`

func writeManifest(t *testing.T, dir, path string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(strings.Replace(diffManifest, "PATH", path, 1)), 0o600))
}

func TestDiffAgainstDatabaseKong(t *testing.T) {
	ctx := context.Background()
	e := kongemu.New(kongemu.Options{Mode: kongemu.Postgres})
	srv, err := e.Start()
	require.NoError(t, err)
	defer func() { _ = srv.Close() }()
	dir := t.TempDir()
	writeManifest(t, dir, "/")
	var stderr bytes.Buffer
	diffStderr = &stderr
	diff := func() string {
		var out bytes.Buffer
		require.NoError(t, runDiff(ctx, []string{"--kong-admin-url", srv.URL, "-f", dir}, &out))
		return out.String()
	}

	// Empty Kong: everything is to create, and nothing is written.
	out := diff()
	require.Contains(t, out, "create service foo-namespace.foo-svc.80 (Service foo-namespace/foo-svc)\n")
	require.Contains(t, out, "create route foo-namespace.foo.foo-svc.example.com.80 (Ingress foo-namespace/foo)\n")
	require.Contains(t, out, "create upstream foo-svc.foo-namespace.80.svc")
	require.Contains(t, out, "create target 10.0.0.1:8080")
	require.True(t, strings.HasSuffix(out, srv.URL+": 4 to create, 0 to update, 0 to delete (entities tagged \"managed-by-ingress-controller\")\n"), out)
	require.Empty(t, e.Audit(), "diff changes nothing")

	// Sync it, then change the path: one update, with its field diff.
	apply(t, srv.URL, dir)
	require.Contains(t, diff(), ": 0 to create, 0 to update, 0 to delete")
	writeManifest(t, dir, "/v2")
	mark := e.AuditMark()
	out = diff()
	require.Contains(t, out, "update route foo-namespace.foo.foo-svc.example.com.80 (Ingress foo-namespace/foo)\n    paths: [\"/\"] -> [\"/v2/\",\"~/v2$\"]\n")
	require.Contains(t, out, ": 0 to create, 1 to update, 0 to delete")
	require.Empty(t, e.AuditSince(mark))

	// Another filter tag owns nothing here: all is to create, nothing to delete.
	var other bytes.Buffer
	require.NoError(t, runDiff(ctx, []string{"--kong-admin-url=" + srv.URL, "--kong-admin-filter-tag", "other", "--filename=" + dir}, &other))
	require.Contains(t, other.String(), ": 4 to create, 0 to update, 0 to delete (entities tagged \"other\")")
}

func apply(t *testing.T, url, dir string) {
	t.Helper()
	objs, err := manifest.Load(dir)
	require.NoError(t, err)
	st, err := store.NewForObjects(objs, store.Options{})
	require.NoError(t, err)
	snap, err := st.Snapshot(context.Background())
	require.NoError(t, err)
	s, _ := translator.Translate(snap, translator.Options{})
	g, err := dbmode.New(url, &http.Client{}, dbmode.Options{})
	require.NoError(t, err)
	_, err = g.Apply(context.Background(), s)
	require.NoError(t, err)
}

func TestDiffRefusesDBLessKong(t *testing.T) {
	srv, err := kongemu.New(kongemu.Options{}).Start()
	require.NoError(t, err)
	defer func() { _ = srv.Close() }()
	dir := t.TempDir()
	writeManifest(t, dir, "/")
	err = runDiff(context.Background(), []string{"--kong-admin-url", srv.URL, "-f", dir}, &bytes.Buffer{})
	require.ErrorContains(t, err, "DB-less")
	require.ErrorContains(t, runDiff(context.Background(), []string{"-f"}, &bytes.Buffer{}), "needs a FILE|DIR")
}
