package translator

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/manifest"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
)

// An Ingress left out for a plugin it cannot have is not translated again, nor is the
// Service only it uses; but what that Service read stays in the result's graph, so that a
// change of it (the Service's own plugin removed, which would then leave the Service out too)
// wakes a round and reaches the Service.
func TestLeftOutObjectsKeepWhatTheyReadInTheGraph(t *testing.T) {
	loaded, err := manifest.Parse([]byte(`
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: app, namespace: ns, annotations: {konghq.com/plugins: missing}}
spec:
  ingressClassName: kong
  rules:
  - http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: svc, port: {number: 80}}}}
---
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: ns, annotations: {konghq.com/plugins: cp}}
spec: {ports: [{port: 80}]}
---
apiVersion: configuration.konghq.com/v1
kind: KongClusterPlugin
metadata: {name: cp, annotations: {kubernetes.io/ingress.class: kong}}
plugin: correlation-id
`))
	require.NoError(t, err)
	st, err := store.NewForObjects(loaded.Objects, store.Options{IngressClass: "kong"})
	require.NoError(t, err)
	snap, err := st.Snapshot(t.Context())
	require.NoError(t, err)
	res := Build(snap, Options{})
	require.Contains(t, res.Problems, Problem{Object: ref(gvkIngress, "ns", "app"), Field: "metadata.annotations[konghq.com/plugins]",
		Message: `left out with everything that depends on it: KongPlugin or KongClusterPlugin "missing" does not exist; konductor never serves an object without a plugin it names`})
	require.Contains(t, res.Graph.References(ref(gvkService, "ns", "svc")), objgraph.Key(ref(gvkKongClusterPlugin, "", "cp")))
}
