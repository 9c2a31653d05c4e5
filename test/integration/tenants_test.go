package integration

import (
	"strings"
	"testing"
	"time"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/konductor/konductor/internal/kongemu"
)

// Issue #26 items 1 and 2 end to end, in both modes: a tenant takes no name Kong keeps
// globally from another and makes Kong connect to nothing local.
//   - Two KongConsumers with one username in two namespaces: KIC renders both with one ID, and
//     in database mode the sync then puts the younger's key on the older's consumer (the
//     younger logs in as the older). Here the younger is left out: Kong holds the older's
//     consumer with its key only.
//   - A tenant's labelled Secret claims the data.id of the platform's CA certificate: neither
//     is rendered, and both Secrets carry the reason.
//   - ExternalNames of localhost and of 169.254.169.254: no such target reaches Kong, and the
//     Services say why; the victim's Ingress is served.
func TestTenantsTakeNothingFromEachOther(t *testing.T) {
	parallel(t)
	for _, mode := range []kongemu.Mode{kongemu.DBLess, kongemu.Postgres} {
		t.Run(string(mode), func(t *testing.T) { testTenantsTakeNothing(t, mode) })
	}
}

func testTenantsTakeNothing(t *testing.T, mode kongemu.Mode) {
	victim, tenant := newNamespace(t), newNamespace(t)
	class := map[string]string{"kubernetes.io/ingress.class": "kong"}
	key := func(ns, name, value string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"konghq.com/credential": "key-auth"}},
			StringData: map[string]string{"key": value}}
	}
	_, caBytes := servingCert(t, []string{"unused.example.com"}, nil)
	caCert := string(caBytes)
	ca := func(ns, name string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"konghq.com/ca-cert": "true"}},
			StringData: map[string]string{"id": "0a0a0a0a-0000-4000-8000-00000000000a", "cert": caCert}}
	}
	objs := append(app(victim, "shop", "shop.example.com"),
		&kongv1.KongConsumer{ObjectMeta: metav1.ObjectMeta{Namespace: victim, Name: "alice", Annotations: class}, Username: "alice", Credentials: []string{"alice-key"}},
		key(victim, "alice-key", "alice-key-value"),
		ca(victim, "platform-ca"),
	)
	createAll(t, objs)
	time.Sleep(1100 * time.Millisecond)                          // creationTimestamp has a resolution of a second: the tenant's are younger
	objs = append(app(tenant, "probe", "probe.example.com")[2:], // the Ingress; its Services are these:
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "probe"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost", Ports: []corev1.ServicePort{{Port: 80}}}},
		&kongv1.KongConsumer{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "impostor", Annotations: class}, Username: "alice", Credentials: []string{"impostor-key"}},
		key(tenant, "impostor-key", "impostor-key-value"),
		ca(tenant, "claim"),
	)
	// (The API server refuses EndpointSlices of loopback and link-local addresses; a Service
	// of type ExternalName is how a tenant names them.)
	objs = append(objs, app(tenant, "meta", "meta.example.com")[2],
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "meta"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "169.254.169.254", Ports: []corev1.ServicePort{{Port: 80}}}})
	createAll(t, objs)

	kong := startEmulator(t, mode)
	args := []string{"--leader-elect=false", "--watch-namespace", victim + "," + tenant}
	if mode == kongemu.Postgres {
		args = append(handoverArgs(victim), "--watch-namespace", victim+","+tenant)
	}
	startReplica(t, replicaSpec{name: "r1", namespace: victim, gateways: []string{kong.URL}, args: args})

	require.Eventually(t, func() bool { return kong.Entity("routes", routeName(victim, "shop")) != nil }, time.Minute, 50*time.Millisecond,
		"the victim's Ingress is served")
	// The victim's consumer holds the victim's key, and only it.
	require.Eventually(t, func() bool { return kong.Entity("consumers", "alice") != nil }, 30*time.Second, 50*time.Millisecond)
	alice := kong.Entity("consumers", "alice")
	var keys []string
	for _, k := range kong.Entities("keyauth_credentials") {
		if c, ok := k["consumer"].(map[string]any); ok && c["id"] == alice["id"] {
			keys = append(keys, k["key"].(string))
		}
	}
	require.Equal(t, []string{"alice-key-value"}, keys, "the impostor's key is not on alice's consumer")
	require.Len(t, kong.Entities("consumers"), 1)
	// No CA certificate of that id: claimed from two namespaces.
	require.Empty(t, kong.Entities("ca_certificates"))
	// No local target.
	for _, tg := range kong.Entities("targets") {
		target := tg["target"].(string)
		require.False(t, strings.HasPrefix(target, "localhost") || strings.HasPrefix(target, "169.254."), "target %s", target)
	}

	says := func(ns, kind, name, text string) bool { return hasEvent(t, ns, kind, name, text) }
	require.Eventually(t, func() bool {
		return says(tenant, "KongConsumer", "impostor", `username "alice" is already KongConsumer `+victim+"/alice's") &&
			says(tenant, "Secret", "claim", "also claimed from namespace "+victim) &&
			says(victim, "Secret", "platform-ca", "also claimed from namespace "+tenant) &&
			says(tenant, "Service", "probe", "is a loopback name") &&
			says(tenant, "Service", "meta", "is a link-local address")
	}, 30*time.Second, 100*time.Millisecond, "the attacker's objects and the platform's CA say why: %v", eventsIn(t, tenant))
}
