package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongemu"
)

// translate reads KongCustomEntities and KongLicenses; with --kong-admin-url it asks that
// Kong for what the controller learns from its gateways (edition, entity schemas).
func TestTranslateCustomEntitiesAndLicenseAskTheGateway(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.yaml")
	require.NoError(t, os.WriteFile(in, []byte(`apiVersion: configuration.konghq.com/v1alpha1
kind: KongCustomEntity
metadata: {name: contacts, namespace: default}
spec:
  type: degraphql_routes
  controllerName: kong
  fields: {uri: /contacts, query: "query{ contacts { name } }"}
---
apiVersion: configuration.konghq.com/v1alpha1
kind: KongLicense
metadata: {name: license}
rawLicenseString: '{"license":{}}'
enabled: true
`), 0o644))
	var stderr bytes.Buffer
	translateStderr = &stderr
	t.Cleanup(func() { translateStderr = os.Stderr })

	var out bytes.Buffer
	require.NoError(t, runTranslate(context.Background(), []string{"-f", in}, &out))
	require.NotContains(t, out.String(), "degraphql_routes")
	require.NotContains(t, out.String(), "licenses")
	require.Contains(t, stderr.String(), "KongCustomEntity default/contacts: spec.type: failed to fetch entity schema for entity type degraphql_routes")

	s, err := kongemu.New(kongemu.Options{Edition: kongemu.Enterprise}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	stderr.Reset()
	out.Reset()
	require.NoError(t, runTranslate(context.Background(), []string{"-f", in, "--kong-admin-url", s.URL}, &out))
	require.Empty(t, stderr.String())
	require.Regexp(t, `degraphql_routes:\n- id: [0-9a-f-]{36}\n  query: query\{ contacts \{ name \} \}\n  uri: /contacts\n`, out.String())
	require.Contains(t, out.String(), "licenses:\n- id: ")
}

// translate's --kong-version, --router-flavor and --feature-gates give what the controller
// sends to such a Kong with those gates: each golden case translated with the flags that
// stand for its options is its golden output, byte for byte, and without them it is not.
func TestTranslateFlagsAreTheControllersSettings(t *testing.T) {
	td := filepath.Join("..", "..", "internal", "translator", "testdata")
	golden := func(c string) string {
		b, err := os.ReadFile(filepath.Join(td, c, "out_golden.yaml"))
		require.NoError(t, err)
		return string(b)
	}
	run := func(c string, flags ...string) (string, string) {
		var stderr, out bytes.Buffer
		translateStderr = &stderr
		t.Cleanup(func() { translateStderr = os.Stderr })
		require.NoError(t, runTranslate(context.Background(), append([]string{"-f", filepath.Join(td, c, "in.yaml")}, flags...), &out))
		return out.String(), stderr.String()
	}
	for _, tc := range []struct {
		golden, in string
		flags      []string
	}{
		// Kong 3.9: the redirect plugin.
		{"httproute-redirect-kong-3.9", "httproute-redirect-kong-3.9", []string{"--kong-version", "3.9.0"}},
		// Kong Gateway Enterprise's four-number version is 3.9 too.
		{"httproute-redirect-kong-3.9", "httproute-redirect-kong-3.9", []string{"--kong-version", "3.9.1.2"}},
		// No version: as KIC's golden tests.
		{"httproute-redirect", "httproute-redirect-kong-3.9", nil},
		{"httproute-redirect", "httproute-redirect-kong-3.9", []string{"--kong-version", "3.8.1"}},
		{"upstream-policy-sticky-kong-3.10", "upstream-policy-sticky-kong-3.10", []string{"--kong-version", "3.10.0"}},
		{"expressions", "expressions", []string{"--router-flavor", "expressions"}},
		{"regex-traditional-compatible", "regex-traditional-compatible", []string{"--router-flavor", "traditional_compatible"}},
		{"rewrite", "rewrite", []string{"--feature-gates", "RewriteURIs=true"}},
		{"service-facade", "service-facade", []string{"--feature-gates", "KongServiceFacade=true"}},
		{"gateway-l4-routes", "gateway-l4-routes", []string{"--feature-gates=GatewayAlpha=true"}},
		{"custom-entities-gate-off", "custom-entities-gate-off", []string{"--feature-gates", "KongCustomEntity=false"}},
	} {
		out, _ := run(tc.in, tc.flags...)
		require.Equal(t, golden(tc.golden), out, "%s %v", tc.in, tc.flags)
	}
	// Without the flags, those cases are not their goldens: the flags changed something.
	for _, c := range []string{"httproute-redirect-kong-3.9", "expressions", "rewrite", "service-facade", "gateway-l4-routes"} {
		out, _ := run(c)
		require.NotEqual(t, golden(c), out, c)
	}
	// --externalname-services: a domain name is a target by default (KIC's), not with deny.
	out, stderr := run("externalname-services")
	require.Contains(t, out, "target: api.example.org:80")
	require.NotContains(t, stderr, "--externalname-services=deny")
	out, stderr = run("externalname-services", "--externalname-services", "deny")
	require.NotContains(t, out, "target: api.example.org:80")
	require.Contains(t, stderr, "Service tenant/external: spec.externalName: ExternalName Services are not targets here (--externalname-services=deny)")

	_, stderr = run("upstream-policy-sticky-kong-3.10", "--kong-version", "3.10.0")
	require.Contains(t, stderr, "Service default/web: metadata.annotations[konghq.com/upstream-policy]: sticky sessions algorithm specified in KongUpstreamPolicy 'sticky' is not supported with Kong Gateway versions < 3.11.0")
	_, stderr = run("upstream-policy-sticky-kong-3.10", "--kong-version", "3.11.0")
	require.Empty(t, stderr)

	for _, bad := range [][]string{
		{"--kong-version", "three"},
		{"--router-flavor", "atc"},
		{"--feature-gates", "NoSuchGate=true"},
		{"--externalname-services", "none"},
	} {
		var out bytes.Buffer
		err := runTranslate(context.Background(), append([]string{"-f", filepath.Join(td, "empty", "in.yaml")}, bad...), &out)
		require.Error(t, err, "%v", bad)
		require.Contains(t, err.Error(), bad[0])
	}
}
