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
	require.Contains(t, out.String(), "degraphql_routes:\n- query: query{ contacts { name } }\n  uri: /contacts\n")
	require.Contains(t, out.String(), "licenses:\n- id: ")
}
