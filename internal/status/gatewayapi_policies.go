package status

import (
	"context"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/store"
)

// maxAncestors is the Gateway API's limit of a policy's status.ancestors.
const maxAncestors = 16

// namespacedName is a Gateway's namespace and name.
type namespacedName struct{ namespace, name string }

// serviceGateways maps each Service (namespace/name) that an HTTPRoute names as a backend to
// the Gateways that route is accepted by with all its references resolved: a
// BackendTLSPolicy's ancestors in KIC's sense (its getBackendTLSPolicyAncestors). With
// unresolved, routes whose references do not all resolve count too (the ancestors of a
// policy whose Service does not exist: a route naming it cannot resolve it).
func serviceGateways(a *gatewayapi.Attachment, snap *store.Snapshot, unresolved bool) map[string]map[namespacedName]bool {
	out := map[string]map[namespacedName]bool{}
	for _, hr := range snap.HTTPRoutes {
		if hr == nil {
			continue
		}
		ra := a.Route(gatewayapi.KindHTTPRoute, hr)
		if ra == nil || len(ra.RefProblems) > 0 && !unresolved {
			continue
		}
		var gws []namespacedName
		for _, p := range ra.Parents {
			if p.Accepted && p.Gateway != nil {
				gws = append(gws, namespacedName{p.Gateway.Gateway.Namespace, p.Gateway.Gateway.Name})
			}
		}
		for _, key := range gatewayapi.HTTPRouteServiceBackends(hr) {
			for _, g := range gws {
				if out[key] == nil {
					out[key] = map[namespacedName]bool{}
				}
				out[key][g] = true
			}
		}
	}
	return out
}

// policyAncestors is status.ancestors of a BackendTLSPolicy: the entries of other controllers
// as they are, then ours, one per Gateway (sorted by namespace and name) with the verdict's
// Accepted and ResolvedRefs conditions (lastTransitionTime kept where the status did not
// change), up to the API's 16 entries. Our entries for Gateways no longer ancestors go.
func policyAncestors(have []gatewayv1.PolicyAncestorStatus, gateways []namespacedName, v gatewayapi.BackendTLSPolicyVerdict, controller string, gen int64, now time.Time) []gatewayv1.PolicyAncestorStatus {
	sort.Slice(gateways, func(i, j int) bool {
		if gateways[i].namespace != gateways[j].namespace {
			return gateways[i].namespace < gateways[j].namespace
		}
		return gateways[i].name < gateways[j].name
	})
	want := make([]ancestorEntry, 0, len(gateways))
	for _, g := range gateways {
		want = append(want, ancestorEntry{
			ref:        ancestorRef(gatewayv1.GroupName, "Gateway", g.namespace, g.name),
			conditions: []metav1.Condition{v.Accepted, v.ResolvedRefs},
		})
	}
	return mergeAncestors(have, want, controller, gen, now)
}

// ancestorEntry is one ancestor of a policy and the conditions our controller gives it.
type ancestorEntry struct {
	ref        gatewayv1.ParentReference
	conditions []metav1.Condition
}

func ancestorRef(group, kind, namespace, name string) gatewayv1.ParentReference {
	g, k, ns := gatewayv1.Group(group), gatewayv1.Kind(kind), gatewayv1.Namespace(namespace)
	return gatewayv1.ParentReference{Group: &g, Kind: &k, Namespace: &ns, Name: gatewayv1.ObjectName(name)}
}

// ancestorKey identifies an ancestorRef: its group, kind, namespace and name.
func ancestorKey(r gatewayv1.ParentReference) string {
	var group, kind, ns string
	if r.Group != nil {
		group = string(*r.Group)
	}
	if r.Kind != nil {
		kind = string(*r.Kind)
	}
	if r.Namespace != nil {
		ns = string(*r.Namespace)
	}
	return group + "/" + kind + "/" + ns + "/" + string(r.Name)
}

// mergeAncestors is a policy's status.ancestors (Gateway API's PolicyAncestorStatus, shared
// by BackendTLSPolicy and KongUpstreamPolicy): every entry stays where it is, the entries of
// other controllers as they are and ours with want's conditions (lastTransitionTime kept where
// a condition's status did not change, observedGeneration gen); our new entries go last, in
// want's order, up to the API's 16 entries. Our entries for objects no longer ancestors go.
func mergeAncestors(have []gatewayv1.PolicyAncestorStatus, want []ancestorEntry, controller string, gen int64, now time.Time) []gatewayv1.PolicyAncestorStatus {
	index := make(map[string]int, len(want))
	for i, w := range want {
		index[ancestorKey(w.ref)] = i
	}
	return mergeInPlace(have, len(want),
		func(h gatewayv1.PolicyAncestorStatus) bool { return string(h.ControllerName) == controller },
		func(h gatewayv1.PolicyAncestorStatus) int {
			if i, ok := index[ancestorKey(h.AncestorRef)]; ok {
				return i
			}
			return -1
		},
		func(i int, h *gatewayv1.PolicyAncestorStatus) gatewayv1.PolicyAncestorStatus {
			a := gatewayv1.PolicyAncestorStatus{AncestorRef: want[i].ref, ControllerName: gatewayv1.GatewayController(controller)}
			if h != nil {
				a.Conditions = append(a.Conditions, h.Conditions...)
			}
			for _, c := range want[i].conditions {
				setCondition(&a.Conditions, c, gen, now)
			}
			return a
		}, maxAncestors)
}

// updateBackendTLSPolicies writes status.ancestors of every BackendTLSPolicy whose entries of
// our controller differ. The patch carries the resourceVersion, so that an entry another
// controller wrote meanwhile is not lost: on a conflict the policy is read again and our
// entries merged into it (writeStatusRetrying), so its status does not stay stale until the
// next pass.
func (u *GatewayAPIUpdater) updateBackendTLSPolicies(ctx context.Context, a *gatewayapi.Attachment, snap *store.Snapshot, now time.Time, errs *failures) {
	if !u.GatewayAlpha || len(snap.BackendTLSPolicies) == 0 {
		return
	}
	byService := serviceGateways(a, snap, false)
	var byAnyService map[string]map[namespacedName]bool // made when a policy needs it
	services := make(map[string]bool, len(snap.Services))
	for _, svc := range snap.Services {
		if svc != nil {
			services[svc.Namespace+"/"+svc.Name] = true
		}
	}
	exists := gatewayapi.CAObjects(withLoadedData(u.Payloads, snap.ConfigMaps), withLoadedData(u.Payloads, snap.Secrets))
	for _, p := range snap.BackendTLSPolicies {
		if p == nil {
			continue
		}
		var targets, missing []string
		for _, t := range p.Spec.TargetRefs {
			if gatewayapi.IsServiceTarget(t) {
				key := p.Namespace + "/" + string(t.Name)
				targets = append(targets, key)
				if !services[key] {
					missing = append(missing, key)
				}
			}
		}
		v := gatewayapi.JudgeBackendTLSPolicy(p, snap.BackendTLSPolicies, exists)
		ancestors := byService
		if len(targets) > 0 && len(missing) == len(targets) {
			// No Service it targets exists: the spec's TargetNotFound, on the Gateways of the
			// routes that name one (whose references cannot resolve, so KIC, which takes
			// ancestors only from resolved routes, writes nothing).
			if byAnyService == nil {
				byAnyService = serviceGateways(a, snap, true)
			}
			ancestors = byAnyService
			v.Accepted = metav1.Condition{Type: string(gatewayv1.PolicyConditionAccepted), Status: metav1.ConditionFalse,
				Reason: string(gatewayv1.PolicyReasonTargetNotFound), Message: "Service " + strings.Join(missing, ", Service ") + " not found"}
		}
		set := map[namespacedName]bool{}
		for _, key := range targets {
			for g := range ancestors[key] {
				set[g] = true
			}
		}
		gateways := make([]namespacedName, 0, len(set))
		for g := range set {
			gateways = append(gateways, g)
		}
		// The verdict is the snapshot's spec's: its generation is the one observed.
		generation := p.Generation
		err := u.writeStatusRetrying(ctx, u.reader, p, func() client.Object { return &gatewayv1.BackendTLSPolicy{} }, func(current client.Object) client.Object {
			have := current.(*gatewayv1.BackendTLSPolicy).Status.Ancestors
			want := policyAncestors(have, gateways, v, u.controller, generation, now)
			if equality.Semantic.DeepEqual(want, have) || len(want) == 0 && len(have) == 0 {
				return nil
			}
			updated := current.DeepCopyObject().(*gatewayv1.BackendTLSPolicy)
			updated.Status.Ancestors = want
			return updated
		})
		if err != nil {
			errs.add("BackendTLSPolicy", p, err)
		}
	}
}
