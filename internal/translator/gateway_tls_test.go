package translator

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/manifest"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
)

// A Gateway refers to its GatewayClass, to the Secrets of its listeners' certificateRefs, granted or not, and to
// the ReferenceGrant that permits one in another namespace: a change to any of them wakes
// translation (relevance.go), even for a Secret that is not permitted yet.
func TestGatewayListenerCertsInGraph(t *testing.T) {
	res := buildCase(t, "gateway-tls")
	gw := ref(gvkGateway, "default", "kong")
	require.Equal(t, []kongstate.ObjectRef{
		objgraph.Key(ref(gvkGatewayClass, "", "kong")),
		objgraph.Key(ref(gvkReferenceGrant, "certs", "gateways")),
		objgraph.Key(ref(gvkSecret, "certs", "private-cert")),
		objgraph.Key(ref(gvkSecret, "certs", "shared-cert")),
		objgraph.Key(ref(gvkSecret, "default", "gw-cert")),
		// Its listener's host ing.example.com, which an Ingress names too.
		objgraph.Key(objgraph.SharedValue("sni ing.example.com")),
	}, res.Graph.References(gw))

	var r Relevance
	r.SetGraph(res.Graph)
	for _, name := range []string{"private-cert", "shared-cert"} {
		require.True(t, r.Relevant(nil, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "certs", Name: name}}), name)
	}
	require.False(t, r.Relevant(nil, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "certs", Name: "unrelated"}}))
}

// A listener naming more than one Secret gets no certificate, but its Secrets are still in
// the graph: the Gateway's ResolvedRefs condition reads each of them, so creating or fixing
// one must wake translation and status.
func TestGatewayListenerWithTwoCertsRefersToBoth(t *testing.T) {
	objs, err := manifest.Load(filepath.Join("testdata", "gateway-tls", "in.yaml"))
	require.NoError(t, err)
	for _, o := range objs {
		if gw, ok := o.(*gatewayv1.Gateway); ok {
			for i := range gw.Spec.Listeners {
				if gw.Spec.Listeners[i].Name == "https-two" {
					gw.Spec.Listeners[i].TLS.CertificateRefs = []gatewayv1.SecretObjectReference{{Name: "two-rsa"}, {Name: "two-ecdsa"}}
				}
			}
		}
	}
	st, err := store.NewForObjects(objs, store.Options{})
	require.NoError(t, err)
	snap, err := st.Snapshot(context.Background())
	require.NoError(t, err)
	res := Build(snap, Options{})

	refs := res.Graph.References(ref(gvkGateway, "default", "kong"))
	for _, name := range []string{"two-rsa", "two-ecdsa"} {
		require.Contains(t, refs, objgraph.Key(ref(gvkSecret, "default", name)), name)
	}
}

// Each Secret of a listener's RSA+ECDSA pair is read and reported as an Ingress's one TLS
// Secret is (secretCertificate): missing, on the listener; not a key pair, on the listener
// and on the Secret.
func TestDualCertificateSecretsAreReportedAsOne(t *testing.T) {
	dir := filepath.Join("testdata", "gateway-tls-dual")
	problemsWith := func(change func(objs []client.Object) []client.Object) []string {
		objs, err := manifest.Load(filepath.Join(dir, "in.yaml"))
		require.NoError(t, err)
		_, problems := translateCaseObjects(t, dir, change(objs))
		var out []string
		for _, p := range problems {
			if p.Object.Kind != "Gateway" || strings.HasPrefix(p.Field, "spec.listeners[0]") {
				out = append(out, p.String())
			}
		}
		return out
	}
	missing := problemsWith(func(objs []client.Object) []client.Object {
		return slices.DeleteFunc(objs, func(o client.Object) bool { return o.GetName() == "ecdsa-cert" })
	})
	require.Contains(t, missing, "Gateway default/kong: spec.listeners[0].tls.certificateRefs: Failed to fetch the secret (default/ecdsa-cert)")
	invalid := problemsWith(func(objs []client.Object) []client.Object {
		for _, o := range objs {
			if s, ok := o.(*corev1.Secret); ok && s.Name == "rsa-cert" {
				s.Data[corev1.TLSPrivateKeyKey] = []byte("not a key")
			}
		}
		return objs
	})
	require.Subset(t, invalid, []string{
		"Gateway default/kong: spec.listeners[0].tls.certificateRefs: failed to construct certificate from secret",
		"Secret default/rsa-cert: data: failed to construct certificate from secret",
	})
}
