package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blang/semver/v4"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/config"
	"github.com/konductor/konductor/internal/manager"

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
	e, srv := startDatabaseKong(t, kongemu.Options{})
	dir := t.TempDir()
	writeManifest(t, dir, "/")
	diff, _ := differ(t, srv.URL, dir)

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

// startDatabaseKong starts an emulated database-backed Kong, stopped with the test.
func startDatabaseKong(t *testing.T, opts kongemu.Options) (*kongemu.Emulator, *kongemu.Server) {
	t.Helper()
	opts.Mode = kongemu.Postgres
	e := kongemu.New(opts)
	srv, err := e.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return e, srv
}

// differ runs `konductor diff` of the manifests in dir against the Kong at url; stderr
// collects the translation's problems.
func differ(t *testing.T, url, dir string) (diff func() string, stderr *bytes.Buffer) {
	stderr = &bytes.Buffer{}
	diffStderr = stderr
	return func() string {
		var out bytes.Buffer
		require.NoError(t, runDiff(context.Background(), []string{"--kong-admin-url", url, "-f", dir}, &out))
		return out.String()
	}, stderr
}

func apply(t *testing.T, url, dir string) {
	t.Helper()
	applyWith(t, url, dir, translator.Options{})
}

// applyWith syncs what the manifests in dir translate to with opts to the database-backed
// Kong at url.
func applyWith(t *testing.T, url, dir string, opts translator.Options) {
	t.Helper()
	objs, err := manifest.Load(dir)
	require.NoError(t, err)
	st, err := store.NewForObjects(objs, store.Options{})
	require.NoError(t, err)
	snap, err := st.Snapshot(context.Background())
	require.NoError(t, err)
	s, _ := translator.Translate(snap, opts)
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

// diff translates as the controller would for the gateway it compares (issue #42): its Kong
// version (the redirect plugin from 3.9, sticky sessions from 3.11), its router flavor and
// the controller's settings. For a gateway of each version gate and each flavor, the
// configuration the controller sends it (the controller's settings, under that gateway's
// version and router as this test spells them out), once synced, leaves diff nothing to do.
// Before, diff translated as for no gateway: on Kong 3.10 it showed the sticky-sessions
// upstream the controller refuses as an update, under expressions every route as an update.
func TestDiffTranslatesAsTheControllerWouldForEachGateway(t *testing.T) {
	dir := t.TempDir()
	for i, golden := range []string{"upstream-policy-sticky-kong-3.10", "httproute-redirect-kong-3.9"} {
		in, err := os.ReadFile(filepath.Join("..", "..", "internal", "translator", "testdata", golden, "in.yaml"))
		require.NoError(t, err)
		// Kong 3.11 requires the cookie of sticky sessions.
		in = bytes.Replace(in, []byte("  slots: 100\n"), []byte("  slots: 100\n  stickySessions: {cookie: session}\n"), 1)
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.yaml", i)), in, 0o600))
	}
	for _, version := range []string{"3.8.1", "3.10.0", "3.11.0"} {
		for _, flavor := range []string{"traditional", "traditional_compatible", "expressions"} {
			t.Run(version+"/"+flavor, func(t *testing.T) {
				ctx := context.Background()
				_, srv := startDatabaseKong(t, kongemu.Options{Version: version, RouterFlavor: flavor})
				diff, stderr := differ(t, srv.URL, dir)

				out := diff()
				v := semver.MustParse(version)
				require.Equal(t, v.GTE(semver.MustParse("3.9.0")), strings.Contains(out, "create plugin redirect "), out)
				require.Equal(t, v.LT(semver.MustParse("3.11.0")), strings.Contains(stderr.String(), "sticky sessions algorithm specified in KongUpstreamPolicy 'sticky' is not supported"), stderr.String())

				// What the controller sends this gateway, spelled out: its defaults, the
				// gateway's version and router.
				cfg, err := config.ParseEnviron(nil, nil)
				require.NoError(t, err)
				opts := manager.TranslationOptions(ctx, cfg, manager.Gateways{}, nil, time.Now())
				opts.KongVersion = v
				opts.ExpressionRoutes = flavor == "expressions"
				opts.RustRegexes = flavor != "traditional"
				applyWith(t, srv.URL, dir, opts)
				require.Contains(t, diff(), srv.URL+": 0 to create, 0 to update, 0 to delete")
			})
		}
	}
}

// An object left out to fail closed (it names a plugin that does not exist) takes its
// entities out of Kong on purpose: diff says so of each such deletion, and why.
func TestDiffSaysWhichDeletionsAreDeliberate(t *testing.T) {
	_, srv := startDatabaseKong(t, kongemu.Options{})
	dir := t.TempDir()
	writeManifest(t, dir, "/")
	apply(t, srv.URL, dir)
	manifest := strings.Replace(diffManifest, "PATH", "/", 1)
	manifest = strings.Replace(manifest, "name: foo-svc, namespace: foo-namespace,", "name: foo-svc, namespace: foo-namespace, annotations: {konghq.com/plugins: no-such-plugin},", 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(manifest), 0o600))
	diff, _ := differ(t, srv.URL, dir)
	out := diff()
	require.Contains(t, out, "delete service foo-namespace.foo-svc.80 (Service foo-namespace/foo-svc) [deliberate, fail closed: left out with everything that depends on it: ")
	require.Contains(t, out, "delete route foo-namespace.foo.foo-svc.example.com.80 (Ingress foo-namespace/foo) [deliberate, fail closed: left out: it depends on Service foo-namespace/foo-svc")
	// The target carries no tags: its upstream's deletion says it is deliberate.
	require.Regexp(t, `delete target 10\.0\.0\.1:8080 for upstream \S+ \[deliberate, fail closed: its upstream is left out: left out with everything`, out)
	require.Contains(t, out, ": 0 to create, 0 to update, 4 to delete (4 deliberate: objects left out to fail closed)")
}
