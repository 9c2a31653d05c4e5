package store

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The cache keeps of an EndpointSlice what targets and gateway discovery read.
func TestStripForCacheKeepsWhatEndpointSlicesAreReadFor(t *testing.T) {
	ready, serving, term := true, true, false
	node, zone, host := "node-1", "zone-a", "h"
	port, name := int32(8080), "http"
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "svc-abc", Labels: map[string]string{discoveryv1.LabelServiceName: "svc",
			"endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io", "app.kubernetes.io/name": "svc"},
			Annotations:     map[string]string{"endpoints.kubernetes.io/last-change-trigger-time": "2026-12-02T00:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Service", Name: "svc"}}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port}},
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{"10.0.0.1"},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &term},
			NodeName:   &node, Zone: &zone, Hostname: &host,
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "pod-1", UID: "u", ResourceVersion: "7"},
		}},
	}
	out, err := StripForCache(es)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*discoveryv1.EndpointSlice)
	want := discoveryv1.Endpoint{
		Addresses:  []string{"10.0.0.1"},
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Terminating: &term},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "pod-1"},
	}
	if !equality.Semantic.DeepEqual(got.Endpoints[0], want) {
		t.Errorf("endpoint kept as %+v, want %+v", got.Endpoints[0], want)
	}
	if got.Labels[discoveryv1.LabelServiceName] != "svc" || len(got.Ports) != 1 || got.AddressType != discoveryv1.AddressTypeIPv4 {
		t.Errorf("labels, ports or address type lost: %+v", got)
	}
	if got.Annotations != nil || got.OwnerReferences != nil {
		t.Errorf("annotations or owner kept: %v %v", got.Annotations, got.OwnerReferences)
	}
	if len(got.Labels) != 1 {
		t.Errorf("labels kept as %v, want the Service's name alone", got.Labels)
	}

	// Endpoints decoded into a larger array are kept in one of their size.
	grown := make([]discoveryv1.Endpoint, 3, 4)
	for i := range grown {
		grown[i] = discoveryv1.Endpoint{Addresses: []string{"10.0.0." + string(rune('1'+i))}}
	}
	out, err = StripForCache(&discoveryv1.EndpointSlice{Endpoints: grown})
	if err != nil {
		t.Fatal(err)
	}
	got = out.(*discoveryv1.EndpointSlice)
	if len(got.Endpoints) != 3 || cap(got.Endpoints) != 3 || got.Endpoints[2].Addresses[0] != "10.0.0.3" {
		t.Errorf("endpoints kept as %+v (cap %d), want the 3 in an array of 3", got.Endpoints, cap(got.Endpoints))
	}
}

// The cache keeps of a Service what translation and Ingress status read.
func TestStripForCacheKeepsWhatServicesAreReadFor(t *testing.T) {
	policy, local := corev1.IPFamilyPolicySingleStack, corev1.ServiceInternalTrafficPolicyLocal
	class, distribution, alloc, timeout := "lb", "PreferClose", true, int32(10)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "u", ResourceVersion: "3", Generation: 2,
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{"konghq.com/protocol": "https", "ingress.kubernetes.io/service-upstream": "true"}},
		Spec: corev1.ServiceSpec{
			Type:         corev1.ServiceTypeLoadBalancer,
			Ports:        []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("web"), Protocol: corev1.ProtocolTCP, AppProtocol: ptr("http"), NodePort: 30080}},
			ClusterIP:    "10.96.0.10",
			ExternalIPs:  []string{"192.0.2.1"},
			ExternalName: "",
			Selector:     map[string]string{"app": "web", "tier": "front"},
			ClusterIPs:   []string{"10.96.0.10"}, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, IPFamilyPolicy: &policy,
			SessionAffinity: corev1.ServiceAffinityClientIP, SessionAffinityConfig: &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &timeout}},
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal, InternalTrafficPolicy: &local, TrafficDistribution: &distribution,
			HealthCheckNodePort: 31000, AllocateLoadBalancerNodePorts: &alloc,
			LoadBalancerSourceRanges: []string{"0.0.0.0/0"}, LoadBalancerClass: &class,
		},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "203.0.113.7"}}}},
	}
	want := svc.DeepCopy()
	want.Spec = corev1.ServiceSpec{
		Type:        corev1.ServiceTypeLoadBalancer,
		Ports:       []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("web"), Protocol: corev1.ProtocolTCP, AppProtocol: ptr("http"), NodePort: 30080}},
		ClusterIP:   "10.96.0.10",
		ExternalIPs: []string{"192.0.2.1"},
	}
	out, err := StripForCache(svc)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.(*corev1.Service); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("stripped Service\n got %+v\nwant %+v", got, want)
	}

	external := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "api.example.com", Ports: []corev1.ServicePort{{Port: 443}}}}
	out, _ = StripForCache(external.DeepCopy())
	if !equality.Semantic.DeepEqual(out, external) {
		t.Errorf("an ExternalName Service changed: %+v", out)
	}
}

// The cache keeps all of an Ingress, each repeated path type and Service backend once, and
// its arrays at their size.
func TestStripForCacheKeepsAllOfAnIngress(t *testing.T) {
	prefix, prefix2, exact := netv1.PathTypePrefix, netv1.PathTypePrefix, netv1.PathTypeExact
	backend := func(name string, port int32) netv1.IngressBackend {
		return netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: name, Port: netv1.ServiceBackendPort{Number: port}}}
	}
	paths := make([]netv1.HTTPIngressPath, 0, 8)
	paths = append(paths,
		netv1.HTTPIngressPath{Path: "/", PathType: &prefix, Backend: backend("web", 80)},
		netv1.HTTPIngressPath{Path: "/api", PathType: &prefix2, Backend: backend("web", 80)},
		netv1.HTTPIngressPath{Path: "/metrics", PathType: &exact, Backend: backend("web", 9090)},
		netv1.HTTPIngressPath{Path: "/other", Backend: backend("other", 80)},
		netv1.HTTPIngressPath{Path: "/bucket", PathType: &prefix, Backend: netv1.IngressBackend{
			Resource: &corev1.TypedLocalObjectReference{Kind: "StorageBucket", Name: "b"}}},
	)
	rules := make([]netv1.IngressRule, 0, 2)
	rules = append(rules, netv1.IngressRule{Host: "a.example.com", IngressRuleValue: netv1.IngressRuleValue{HTTP: &netv1.HTTPIngressRuleValue{Paths: paths}}})
	def := backend("web", 80)
	ing := &netv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ing", Annotations: map[string]string{"konghq.com/strip-path": "true"}},
		Spec:       netv1.IngressSpec{DefaultBackend: &def, Rules: rules},
		Status:     netv1.IngressStatus{LoadBalancer: netv1.IngressLoadBalancerStatus{Ingress: []netv1.IngressLoadBalancerIngress{{IP: "192.0.2.1"}}}},
	}
	want := ing.DeepCopy()
	out, err := StripForCache(ing)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*netv1.Ingress)
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("stripped Ingress\n got %+v\nwant %+v", got, want)
	}
	p := got.Spec.Rules[0].HTTP.Paths
	if cap(p) != len(p) || cap(got.Spec.Rules) != len(got.Spec.Rules) {
		t.Errorf("arrays kept with room: paths %d/%d, rules %d/%d", len(p), cap(p), len(got.Spec.Rules), cap(got.Spec.Rules))
	}
	if p[0].PathType != p[1].PathType || p[0].PathType != p[4].PathType || p[2].PathType == p[0].PathType {
		t.Error("equal path types not shared, or different ones shared")
	}
	if p[0].Backend.Service != p[1].Backend.Service || got.Spec.DefaultBackend.Service != p[0].Backend.Service ||
		p[2].Backend.Service == p[0].Backend.Service || p[3].Backend.Service == p[0].Backend.Service {
		t.Error("equal Service backends not shared, or different ones shared")
	}
}

// An Ingress with many distinct backends shares only the first maxSharedBackends, so that
// the search per path stays bounded; all of it is still kept.
func TestStripForCacheBoundsTheBackendsItShares(t *testing.T) {
	var paths []netv1.HTTPIngressPath
	for round := 0; round < 2; round++ {
		for i := 0; i < 2*maxSharedBackends; i++ {
			paths = append(paths, netv1.HTTPIngressPath{Path: fmt.Sprintf("/%d", i), Backend: netv1.IngressBackend{
				Service: &netv1.IngressServiceBackend{Name: fmt.Sprintf("svc-%d", i), Port: netv1.ServiceBackendPort{Number: 80}}}})
		}
	}
	ing := &netv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "many"},
		Spec: netv1.IngressSpec{Rules: []netv1.IngressRule{{IngressRuleValue: netv1.IngressRuleValue{
			HTTP: &netv1.HTTPIngressRuleValue{Paths: paths}}}}},
	}
	want := ing.DeepCopy()
	out, err := StripForCache(ing)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*netv1.Ingress)
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatal("stripped Ingress differs from the original")
	}
	p := got.Spec.Rules[0].HTTP.Paths
	n := 2 * maxSharedBackends
	if p[0].Backend.Service != p[n].Backend.Service {
		t.Error("a backend among the first distinct ones is not shared")
	}
	if last := n - 1; p[last].Backend.Service == p[n+last].Backend.Service {
		t.Error("a backend beyond maxSharedBackends was shared: the search per path is not bounded")
	}
}
