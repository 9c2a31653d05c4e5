package translator

import (
	"fmt"
	"testing"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/konductor/konductor/internal/store"
)

// amplifiedPlugin is issue #44's amplification: one KongPlugin on n KongConsumers and on an
// Ingress of n hosts (a Kong route each), 156 KiB of objects at n = 400, which KIC's
// combination rule makes n*n plugin entities (160,000 at 400).
func amplifiedPlugin(n int) *store.Snapshot {
	class := map[string]string{"kubernetes.io/ingress.class": "kong", annPlugins: "per-consumer"}
	snap := &store.Snapshot{IngressClass: "kong"}
	snap.KongPlugins = []*kongv1.KongPlugin{{ObjectMeta: metav1.ObjectMeta{Name: "per-consumer", Namespace: "team-b"},
		PluginName: "rate-limiting", Config: apiextensionsv1.JSON{Raw: []byte(`{"minute":5}`)}}}
	ing := &netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "many", Namespace: "team-b", Annotations: class}}
	kong := "kong"
	ing.Spec.IngressClassName = &kong
	prefix := netv1.PathTypePrefix
	for i := range n {
		snap.KongConsumers = append(snap.KongConsumers, &kongv1.KongConsumer{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%d", i), Namespace: "team-b", Annotations: class}, Username: fmt.Sprintf("c%d", i)})
		ing.Spec.Rules = append(ing.Spec.Rules, netv1.IngressRule{Host: fmt.Sprintf("h%d.example.com", i),
			IngressRuleValue: netv1.IngressRuleValue{HTTP: &netv1.HTTPIngressRuleValue{Paths: []netv1.HTTPIngressPath{{Path: "/", PathType: &prefix,
				Backend: netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: "app", Port: netv1.ServiceBackendPort{Number: 80}}}}}}}})
	}
	snap.Ingresses = []*netv1.Ingress{ing}
	snap.Services = []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team-b"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}}
	return snap
}

// BenchmarkAmplifiedPlugin translates amplifiedPlugin(400): B/op is what the attack costs the
// controller now that the plugin passes MaxPluginCombinations and is left out (docs/security.md).
func BenchmarkAmplifiedPlugin(b *testing.B) {
	snap := amplifiedPlugin(400)
	b.ReportAllocs()
	for b.Loop() {
		res := Build(snap, Options{})
		if len(res.State.Plugins) != 0 {
			b.Fatalf("%d plugin entities: the bound did not hold", len(res.State.Plugins))
		}
	}
}
