package store

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cache keeps of an EndpointSlice what targets and gateway discovery read.
func TestStripForCacheKeepsWhatEndpointSlicesAreReadFor(t *testing.T) {
	ready, serving, term := true, true, false
	node, zone, host := "node-1", "zone-a", "h"
	port, name := int32(8080), "http"
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "svc-abc", Labels: map[string]string{discoveryv1.LabelServiceName: "svc"},
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
}
