package store

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gatewayv1alpha3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
)

// Conversions between Gateway API's older versions of TCPRoute, UDPRoute, TLSRoute
// (v1alpha2) and BackendTLSPolicy (v1alpha3), which KIC 3.5 reads and clusters with Gateway
// API CRDs up to v1.4 serve (v1.3 and older for BackendTLSPolicy), and v1, the one type
// translation and status read (issue #30 §2).
//
// The gateway-api module has no conversion functions of its own (v1.6.3: no Convert_*, no
// Hub): its v1alpha2 and v1alpha3 types are Go types defined on the v1 ones (type
// TCPRouteRule v1.TCPRouteRule, type BackendTLSPolicy v1.BackendTLSPolicy, aliases for
// CommonRouteSpec, Hostname, RouteStatus...), so every field has its counterpart and a
// conversion is Go conversions, lossless both ways. What differs between the versions is
// the CRDs' validation, not the fields (docs/gateway-api.md, "Versions read"): an alpha
// route may have up to 16 rules where v1 allows 1, and an alpha TLSRoute no hostnames
// where v1 requires one; such objects convert as they are, and translation reads them as
// KIC 3.5 reads the alpha ones. The one v1 field older CRDs lack, spec.useDefaultGateways
// (CommonRouteSpec, Gateway API 1.4), is simply absent from what they serve.
//
// Conversions are shallow: the result shares slices, maps and pointers with its input (the
// cache's objects are read-only; a caller that changes the result deep-copies it first).
// An object converted to v1 keeps in its TypeMeta the version it was read at, which is how
// a status write goes back in that version (AsRead); nothing else reads a typed object's
// TypeMeta (the scheme decides a Go type's kind).

// ToInternal converts an object of an older version a kind is read at (Kind.Versions) to the
// kind's own type, v1; ok is false for any other object. The result's TypeMeta names the
// version converted from (AsRead).
func ToInternal(obj client.Object) (out client.Object, ok bool) {
	switch in := obj.(type) {
	case *gatewayv1alpha2.TCPRoute:
		return TCPRouteFromV1alpha2(in), true
	case *gatewayv1alpha2.UDPRoute:
		return UDPRouteFromV1alpha2(in), true
	case *gatewayv1alpha2.TLSRoute:
		return TLSRouteFromV1alpha2(in), true
	case *gatewayv1alpha3.BackendTLSPolicy:
		return BackendTLSPolicyFromV1alpha3(in), true
	}
	return nil, false
}

// fromInternal converts a v1 object to the older version gv of its kind; ok is false when
// gv is not an older version of the object's kind.
func fromInternal(obj client.Object, gv schema.GroupVersion) (out client.Object, ok bool) {
	switch in := obj.(type) {
	case *gatewayv1.TCPRoute:
		if gv == gatewayv1alpha2.SchemeGroupVersion {
			return TCPRouteToV1alpha2(in), true
		}
	case *gatewayv1.UDPRoute:
		if gv == gatewayv1alpha2.SchemeGroupVersion {
			return UDPRouteToV1alpha2(in), true
		}
	case *gatewayv1.TLSRoute:
		if gv == gatewayv1alpha2.SchemeGroupVersion {
			return TLSRouteToV1alpha2(in), true
		}
	case *gatewayv1.BackendTLSPolicy:
		if gv == gatewayv1alpha3.SchemeGroupVersion {
			return BackendTLSPolicyToV1alpha3(in), true
		}
	}
	return nil, false
}

// readAt is the TypeMeta of an object converted from version gv: the version it was read at.
func readAt(gv schema.GroupVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: gv.String(), Kind: kind}
}

// TCPRouteFromV1alpha2 converts a v1alpha2 TCPRoute to v1 (shallow; see above).
func TCPRouteFromV1alpha2(in *gatewayv1alpha2.TCPRoute) *gatewayv1.TCPRoute {
	out := &gatewayv1.TCPRoute{
		TypeMeta:   readAt(gatewayv1alpha2.SchemeGroupVersion, "TCPRoute"),
		ObjectMeta: in.ObjectMeta,
		Spec:       gatewayv1.TCPRouteSpec{CommonRouteSpec: in.Spec.CommonRouteSpec},
		Status:     gatewayv1.TCPRouteStatus(in.Status),
	}
	if in.Spec.Rules != nil {
		out.Spec.Rules = make([]gatewayv1.TCPRouteRule, len(in.Spec.Rules))
		for i, r := range in.Spec.Rules {
			out.Spec.Rules[i] = gatewayv1.TCPRouteRule(r)
		}
	}
	return out
}

// TCPRouteToV1alpha2 converts a v1 TCPRoute to v1alpha2 (shallow).
func TCPRouteToV1alpha2(in *gatewayv1.TCPRoute) *gatewayv1alpha2.TCPRoute {
	out := &gatewayv1alpha2.TCPRoute{
		TypeMeta:   readAt(gatewayv1alpha2.SchemeGroupVersion, "TCPRoute"),
		ObjectMeta: in.ObjectMeta,
		Spec:       gatewayv1alpha2.TCPRouteSpec{CommonRouteSpec: in.Spec.CommonRouteSpec},
		Status:     gatewayv1alpha2.TCPRouteStatus(in.Status),
	}
	if in.Spec.Rules != nil {
		out.Spec.Rules = make([]gatewayv1alpha2.TCPRouteRule, len(in.Spec.Rules))
		for i, r := range in.Spec.Rules {
			out.Spec.Rules[i] = gatewayv1alpha2.TCPRouteRule(r)
		}
	}
	return out
}

// UDPRouteFromV1alpha2 converts a v1alpha2 UDPRoute to v1 (shallow).
func UDPRouteFromV1alpha2(in *gatewayv1alpha2.UDPRoute) *gatewayv1.UDPRoute {
	out := &gatewayv1.UDPRoute{
		TypeMeta:   readAt(gatewayv1alpha2.SchemeGroupVersion, "UDPRoute"),
		ObjectMeta: in.ObjectMeta,
		Spec:       gatewayv1.UDPRouteSpec{CommonRouteSpec: in.Spec.CommonRouteSpec},
		Status:     gatewayv1.UDPRouteStatus(in.Status),
	}
	if in.Spec.Rules != nil {
		out.Spec.Rules = make([]gatewayv1.UDPRouteRule, len(in.Spec.Rules))
		for i, r := range in.Spec.Rules {
			out.Spec.Rules[i] = gatewayv1.UDPRouteRule(r)
		}
	}
	return out
}

// UDPRouteToV1alpha2 converts a v1 UDPRoute to v1alpha2 (shallow).
func UDPRouteToV1alpha2(in *gatewayv1.UDPRoute) *gatewayv1alpha2.UDPRoute {
	out := &gatewayv1alpha2.UDPRoute{
		TypeMeta:   readAt(gatewayv1alpha2.SchemeGroupVersion, "UDPRoute"),
		ObjectMeta: in.ObjectMeta,
		Spec:       gatewayv1alpha2.UDPRouteSpec{CommonRouteSpec: in.Spec.CommonRouteSpec},
		Status:     gatewayv1alpha2.UDPRouteStatus(in.Status),
	}
	if in.Spec.Rules != nil {
		out.Spec.Rules = make([]gatewayv1alpha2.UDPRouteRule, len(in.Spec.Rules))
		for i, r := range in.Spec.Rules {
			out.Spec.Rules[i] = gatewayv1alpha2.UDPRouteRule(r)
		}
	}
	return out
}

// TLSRouteFromV1alpha2 converts a v1alpha2 TLSRoute to v1 (shallow). An alpha TLSRoute may
// have no hostnames (v1 requires one): it converts with none, and translation treats it as
// it treats a v1 TLSRoute without them.
func TLSRouteFromV1alpha2(in *gatewayv1alpha2.TLSRoute) *gatewayv1.TLSRoute {
	out := &gatewayv1.TLSRoute{
		TypeMeta:   readAt(gatewayv1alpha2.SchemeGroupVersion, "TLSRoute"),
		ObjectMeta: in.ObjectMeta,
		Spec:       gatewayv1.TLSRouteSpec{CommonRouteSpec: in.Spec.CommonRouteSpec, Hostnames: in.Spec.Hostnames},
		Status:     gatewayv1.TLSRouteStatus(in.Status),
	}
	if in.Spec.Rules != nil {
		out.Spec.Rules = make([]gatewayv1.TLSRouteRule, len(in.Spec.Rules))
		for i, r := range in.Spec.Rules {
			out.Spec.Rules[i] = gatewayv1.TLSRouteRule(r)
		}
	}
	return out
}

// TLSRouteToV1alpha2 converts a v1 TLSRoute to v1alpha2 (shallow).
func TLSRouteToV1alpha2(in *gatewayv1.TLSRoute) *gatewayv1alpha2.TLSRoute {
	out := &gatewayv1alpha2.TLSRoute{
		TypeMeta:   readAt(gatewayv1alpha2.SchemeGroupVersion, "TLSRoute"),
		ObjectMeta: in.ObjectMeta,
		Spec:       gatewayv1alpha2.TLSRouteSpec{CommonRouteSpec: in.Spec.CommonRouteSpec, Hostnames: in.Spec.Hostnames},
		Status:     gatewayv1alpha2.TLSRouteStatus(in.Status),
	}
	if in.Spec.Rules != nil {
		out.Spec.Rules = make([]gatewayv1alpha2.TLSRouteRule, len(in.Spec.Rules))
		for i, r := range in.Spec.Rules {
			out.Spec.Rules[i] = gatewayv1alpha2.TLSRouteRule(r)
		}
	}
	return out
}

// BackendTLSPolicyFromV1alpha3 converts a v1alpha3 BackendTLSPolicy to v1 (shallow). The
// module defines the v1alpha3 type as the v1 one: targetRefs (with sectionName),
// validation (caCertificateRefs, wellKnownCACertificates, hostname, subjectAltNames),
// options and status.ancestors are the same fields. Older v1alpha3 CRDs (Gateway API 1.1)
// lack subjectAltNames and options: those are empty then, as in v1 without them.
func BackendTLSPolicyFromV1alpha3(in *gatewayv1alpha3.BackendTLSPolicy) *gatewayv1.BackendTLSPolicy {
	out := gatewayv1.BackendTLSPolicy(*in)
	out.TypeMeta = readAt(gatewayv1alpha3.SchemeGroupVersion, "BackendTLSPolicy")
	return &out
}

// BackendTLSPolicyToV1alpha3 converts a v1 BackendTLSPolicy to v1alpha3 (shallow).
func BackendTLSPolicyToV1alpha3(in *gatewayv1.BackendTLSPolicy) *gatewayv1alpha3.BackendTLSPolicy {
	out := gatewayv1alpha3.BackendTLSPolicy(*in)
	out.TypeMeta = readAt(gatewayv1alpha3.SchemeGroupVersion, "BackendTLSPolicy")
	return &out
}
