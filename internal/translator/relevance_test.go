package translator

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/manifest"
	"github.com/konductor/konductor/internal/store"
)

// Which informer events can change the translation (issue #13): status writes, resyncs and
// objects nothing served refers to do not; before the first translation everything does. Each
// one that cannot says why (issue #42).
func TestRelevance(t *testing.T) {
	r := &Relevance{IngressClass: "kong"}
	meta := func(ns, name string, gen int64, labels, ann map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, Generation: gen, Labels: labels, Annotations: ann, ResourceVersion: "1"}
	}
	secret := func(name string, data string, labels map[string]string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: meta("default", name, 0, labels, nil), Data: map[string][]byte{"k": []byte(data)}}
	}
	unused := secret("unused", "a", nil)
	require.True(t, r.Relevant(nil, unused), "no graph yet: every object counts")

	r.SetGraph(buildCase(t, "consumers").Graph)
	ing := &netv1.Ingress{ObjectMeta: meta("default", "api", 2, nil, map[string]string{"konghq.com/plugins": "limit"})}
	ingStatus := ing.DeepCopy()
	ingStatus.ResourceVersion = "2"
	ingStatus.Status.LoadBalancer.Ingress = []netv1.IngressLoadBalancerIngress{{IP: "192.0.2.1"}}
	ingSpec := ing.DeepCopy()
	ingSpec.Generation = 3
	ingAnn := ing.DeepCopy()
	ingAnn.Annotations = map[string]string{"konghq.com/plugins": "limit, headers"}
	other := "other"
	otherClass := &netv1.Ingress{ObjectMeta: meta("default", "x", 1, nil, nil), Spec: netv1.IngressSpec{IngressClassName: &other}}
	movedIn := otherClass.DeepCopy()
	kong := "kong"
	movedIn.Spec.IngressClassName, movedIn.Generation = &kong, 2

	route := &gatewayv1.HTTPRoute{ObjectMeta: meta("default", "web", 1, nil, nil)}
	routeStatus := route.DeepCopy()
	routeStatus.ResourceVersion = "2"
	routeStatus.Status.Parents = []gatewayv1.RouteParentStatus{{ControllerName: "konghq.com/kic-gateway-controller"}}
	routeSpec := route.DeepCopy()
	routeSpec.Generation = 2
	gw := &gatewayv1.Gateway{ObjectMeta: meta("default", "kong", 1, nil, nil)}
	gwStatus := gw.DeepCopy()
	gwStatus.Status.Listeners = []gatewayv1.ListenerStatus{{Name: "http", AttachedRoutes: 1}}
	class := &gatewayv1.GatewayClass{ObjectMeta: meta("", "kong", 1, nil, nil)}
	classStatus := class.DeepCopy()
	classStatus.Status.Conditions = []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue}}

	slice := func(svc string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: meta("default", svc+"-1", 0, map[string]string{discoveryv1.LabelServiceName: svc}, nil)}
	}
	for _, tc := range []struct {
		name     string
		old, new client.Object
		want     Verdict
	}{
		{"Ingress status write", ing, ingStatus, StatusOnly},
		{"Ingress resync", ing, ing.DeepCopy(), StatusOnly},
		{"Ingress spec change", ing, ingSpec, Relevant},
		{"Ingress annotation change", ing, ingAnn, Relevant},
		{"Ingress of another class", nil, otherClass, OtherClass},
		{"Ingress moved into our class", otherClass, movedIn, Relevant},
		{"Ingress deleted", ing, nil, Relevant},
		{"Secret nothing refers to", nil, unused, NotReferred},
		{"Secret nothing refers to, changed", unused, secret("unused", "b", nil), NotReferred},
		{"credential Secret of a consumer, changed", secret("alice-key", "a", nil), secret("alice-key", "b", nil), Relevant},
		{"credential Secret of a consumer, resync", secret("alice-key", "a", nil), secret("alice-key", "a", nil), SameContent},
		{"CA certificate Secret", nil, secret("ca", "a", map[string]string{"konghq.com/ca-cert": "true"}), Relevant},
		{"Secret a consumer names but that does not exist yet", nil, secret("missing-but-named", "a", nil), NotReferred},
		{"EndpointSlice of a served Service", nil, slice("api"), Relevant},
		{"EndpointSlice of another Service", nil, slice("elsewhere"), NotReferred},
		{"KongPlugin in use", nil, &kongv1.KongPlugin{ObjectMeta: meta("default", "limit", 1, nil, nil)}, Relevant},
		{"KongPlugin nothing uses", nil, &kongv1.KongPlugin{ObjectMeta: meta("default", "spare", 1, nil, nil)}, NotReferred},
		{"KongConsumer of another class", nil, &kongv1.KongConsumer{ObjectMeta: meta("default", "c", 1, nil, map[string]string{"kubernetes.io/ingress.class": "other"})}, OtherClass},
		{"KongConsumer without class (the default class may serve it)", nil, &kongv1.KongConsumer{ObjectMeta: meta("default", "c", 1, nil, nil)}, Relevant},
		{"Service nothing routes to", nil, &corev1.Service{ObjectMeta: meta("default", "elsewhere", 0, nil, nil)}, NotReferred},
		{"Service status write", &corev1.Service{ObjectMeta: meta("default", "api", 0, nil, nil)},
			&corev1.Service{ObjectMeta: meta("default", "api", 0, nil, nil), Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}}}}, SameContent},
		{"HTTPRoute status write (the leader's own)", route, routeStatus, StatusOnly},
		{"HTTPRoute spec change", route, routeSpec, Relevant},
		{"Gateway status write", gw, gwStatus, StatusOnly},
		{"GatewayClass status write", class, classStatus, StatusOnly},
		{"IngressClass", nil, &netv1.IngressClass{ObjectMeta: meta("", "kong", 1, nil, nil)}, Relevant},
	} {
		require.Equal(t, tc.want, r.Verdict(tc.old, tc.new), tc.name)
		require.Equal(t, tc.want == Relevant, r.Relevant(tc.old, tc.new), tc.name)
	}
}

// The status the leader writes on a KongUpstreamPolicy (status.ancestors), a TCPIngress or a
// UDPIngress (status.loadBalancer) does not wake the loop; a spec change of a policy a served
// Service uses, or of a TCPIngress of our class, does.
func TestRelevanceOfStatusWritesOnPoliciesAndStreamIngresses(t *testing.T) {
	r := &Relevance{IngressClass: "kong"}
	r.SetGraph(buildCase(t, "upstream-policy").Graph)
	policy := &kongv1beta1.KongUpstreamPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sticky-ish", Generation: 1, ResourceVersion: "1"}}
	policyStatus := policy.DeepCopy()
	policyStatus.ResourceVersion = "2"
	policyStatus.Status.Ancestors = []gatewayv1.PolicyAncestorStatus{{ControllerName: "konghq.com/kic-gateway-controller",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted"}}}}
	policySpec := policy.DeepCopy()
	policySpec.ResourceVersion, policySpec.Generation = "3", 2
	policySpec.Spec.Slots = ptr(200)
	require.True(t, r.Relevant(policy, policySpec), "a served policy's spec change")
	require.False(t, r.Relevant(policy, policyStatus), "our status write on a served policy")

	classed := metav1.ObjectMeta{Namespace: "default", Name: "db", Generation: 1, ResourceVersion: "1", Annotations: map[string]string{"kubernetes.io/ingress.class": "kong"}}
	tcp := &kongv1beta1.TCPIngress{ObjectMeta: classed}
	tcpStatus := tcp.DeepCopy()
	tcpStatus.ResourceVersion = "2"
	tcpStatus.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}
	tcpSpec := tcp.DeepCopy()
	tcpSpec.ResourceVersion, tcpSpec.Generation = "3", 2
	tcpSpec.Spec.Rules = []kongv1beta1.IngressRule{{Port: 5432}}
	require.True(t, r.Relevant(tcp, tcpSpec), "a TCPIngress spec change")
	require.False(t, r.Relevant(tcp, tcpStatus), "our status write on a TCPIngress")
	udp := &kongv1beta1.UDPIngress{ObjectMeta: classed}
	udpStatus := udp.DeepCopy()
	udpStatus.ResourceVersion = "2"
	udpStatus.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}
	require.False(t, r.Relevant(udp, udpStatus), "our status write on a UDPIngress")
}

// A Secret the cache keeps without its data shows no change of it: an update is judged by
// whether something refers to it, not taken for the same content (issue #42: the operator
// reads "not_referred", the reason the change did not reach Kong).
func TestRelevanceOfASecretWithoutItsData(t *testing.T) {
	r := &Relevance{IngressClass: "kong"}
	r.SetGraph(buildCase(t, "consumers").Graph)
	stripped := func(name, rv string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: rv,
			Annotations: map[string]string{store.PayloadNotCachedAnnotation: "true"}}}
	}
	require.Equal(t, NotReferred, r.Verdict(stripped("unused", "1"), stripped("unused", "2")))
	require.Equal(t, Relevant, r.Verdict(stripped("alice-key", "1"), stripped("alice-key", "2")), "referred to: its data may have changed")
}

// Every ConfigMap is cached since issue #40: a change to one matters when it is labelled as
// a CA certificate or something refers to it (a BackendTLSPolicy's caCertificateRefs), not
// otherwise, and a change to one cached without its data is judged by that alone.
func TestRelevanceOfConfigMaps(t *testing.T) {
	r := &Relevance{IngressClass: "kong"}
	objs, err := manifest.Load(filepath.Join("testdata", "gateway-backendtlspolicy-host", "in.yaml"))
	require.NoError(t, err)
	st, err := store.NewForObjects(objs, store.Options{})
	require.NoError(t, err)
	snap, err := st.Snapshot(context.Background())
	require.NoError(t, err)
	r.SetGraph(Build(snap, Options{GatewayAlpha: true}).Graph)
	cm := func(name, rv string, labels map[string]string, dropped bool) *corev1.ConfigMap {
		c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: rv, Labels: labels},
			Data: map[string]string{"v": rv}}
		if dropped {
			c.Data, c.Annotations = nil, map[string]string{store.PayloadNotCachedAnnotation: "true"}
		}
		return c
	}
	require.Equal(t, NotReferred, r.Verdict(cm("unrelated", "1", nil, false), cm("unrelated", "2", nil, false)))
	require.Equal(t, NotReferred, r.Verdict(cm("unrelated", "1", nil, true), cm("unrelated", "2", nil, true)))
	require.Equal(t, Relevant, r.Verdict(cm("backend-ca", "1", nil, false), cm("backend-ca", "2", nil, false)), "named by a BackendTLSPolicy")
	require.Equal(t, Relevant, r.Verdict(cm("backend-ca", "1", nil, true), cm("backend-ca", "2", nil, true)), "named, cached without data")
	ca := map[string]string{store.CACertLabel: "true"}
	require.Equal(t, Relevant, r.Verdict(cm("labelled", "1", ca, false), cm("labelled", "2", ca, false)))
}

// An HTTPRoute held to some of its Gateway's ports reads the publish Service's ports (their
// Kong ports): a change of that Service translates again, another Service's does not.
func TestRelevanceOfThePublishService(t *testing.T) {
	dir := filepath.Join("testdata", "httproute-listener-ports-expressions")
	objs, err := manifest.Load(filepath.Join(dir, "in.yaml"))
	require.NoError(t, err)
	r := &Relevance{IngressClass: "kong"}
	r.SetGraph(buildObjects(t, objs, readGoldenOptions(t, dir)).Graph)
	svc := func(name string, port int32) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kong", Name: name, ResourceVersion: strconv.Itoa(int(port))},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: port}}}}
	}
	require.True(t, r.Relevant(svc("kong-proxy", 80), svc("kong-proxy", 8080)), "the publish Service")
	require.False(t, r.Relevant(svc("other", 80), svc("other", 8080)), "a Service nothing reads")
}
