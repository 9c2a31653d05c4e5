package admission

import (
	"fmt"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Deprecation warnings. The KongIngress and Service ones are KIC's own words (its admission
// handler, internal/admission/handler.go), so a user switching from KIC sees what it saw;
// KIC 3.5's CRDs deprecate TCPIngress and UDPIngress, whose warning the API server gives only
// with those CRDs installed, so the webhook says it too.
const (
	warnKongIngressProxy    = "Support for 'proxy' was removed in 3.0. It will have no effect. Use Service's annotations instead."
	warnKongIngressRoute    = "Support for 'route' was removed in 3.0. It will have no effect. Use Ingress' annotations instead."
	warnKongIngressUpstream = "'upstream' is DEPRECATED and will be removed in a future version. Use a KongUpstreamPolicy resource instead."
	warnServiceOverride     = "konghq.com/override is deprecated and will be removed in a future release. Use Service annotations for the 'proxy' section and konghq.com/upstream-policy with a KongUpstreamPolicy resource instead."
	warnL4Ingress           = "configuration.konghq.com/v1beta1 %s is deprecated (KIC 3.5): Gateway API's %s replaces it. konductor still translates it."
)

// annOverride is the deprecated annotation that applies a KongIngress to a Service.
const annOverride = "konghq.com/override"

// deprecations lists the warnings obj deserves, whether or not it is otherwise valid.
func deprecations(obj client.Object) []string {
	var out []string
	switch o := obj.(type) {
	case *kongv1.KongIngress:
		if o.Proxy != nil {
			out = append(out, warnKongIngressProxy)
		}
		if o.Route != nil {
			out = append(out, warnKongIngressRoute)
		}
		if o.Upstream != nil {
			out = append(out, warnKongIngressUpstream)
		}
	case *corev1.Service:
		if o.Annotations[annOverride] != "" {
			out = append(out, warnServiceOverride)
		}
	case *kongv1beta1.TCPIngress:
		out = append(out, fmt.Sprintf(warnL4Ingress, "TCPIngress", "TCPRoute or TLSRoute"))
	case *kongv1beta1.UDPIngress:
		out = append(out, fmt.Sprintf(warnL4Ingress, "UDPIngress", "UDPRoute"))
	}
	return out
}
