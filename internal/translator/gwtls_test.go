package translator

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/konductor/konductor/internal/kongstate"
)

// A Gateway refers to the Secrets of its listeners' certificateRefs, granted or not, and to
// the ReferenceGrant that permits one in another namespace: a change to any of them wakes
// translation (relevance.go), even for a Secret that is not permitted yet.
func TestGatewayListenerCertsInGraph(t *testing.T) {
	res := buildCase(t, "gateway-tls")
	gw := ref(gvkGateway, "default", "kong")
	require.Equal(t, []kongstate.ObjectRef{
		Node(ref(gvkReferenceGrant, "certs", "gateways")),
		Node(ref(gvkSecret, "certs", "private-cert")),
		Node(ref(gvkSecret, "certs", "shared-cert")),
		Node(ref(gvkSecret, "default", "gw-cert")),
	}, res.Graph.References(gw))

	var r Relevance
	r.SetGraph(res.Graph)
	for _, name := range []string{"private-cert", "shared-cert"} {
		require.True(t, r.Relevant(nil, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "certs", Name: name}}), name)
	}
	require.False(t, r.Relevant(nil, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "certs", Name: "unrelated"}}))
}
