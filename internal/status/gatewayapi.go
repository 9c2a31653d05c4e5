package status

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
)

// This file computes Gateway API status from one translation's attachment (pure; the
// writer is gatewayapi_updater.go). Each function starts from the status the object holds
// and returns what it should hold, so that an unchanged outcome is an equal status (no
// write) and a condition whose status did not change keeps its lastTransitionTime.

// maxMessage is below the API's limit of a condition message (32768).
const maxMessage = 32000

// setCondition sets c (observedGeneration gen) in conds, keeping the lastTransitionTime of
// a condition whose status did not change.
func setCondition(conds *[]metav1.Condition, c metav1.Condition, gen int64, now time.Time) {
	if len(c.Message) > maxMessage {
		c.Message = c.Message[:maxMessage]
	}
	c.ObservedGeneration = gen
	c.LastTransitionTime = metav1.NewTime(now)
	meta.SetStatusCondition(conds, c)
}

// gatewayClassStatus is the status of one of our GatewayClasses: Accepted, and the features
// the class supports (gatewayapi.SupportedFeatures).
func gatewayClassStatus(have gatewayv1.GatewayClassStatus, gen int64, now time.Time, supported []gatewayv1.SupportedFeature) gatewayv1.GatewayClassStatus {
	want := *have.DeepCopy()
	want.SupportedFeatures = supported
	setCondition(&want.Conditions, metav1.Condition{
		Type: string(gatewayv1.GatewayClassConditionStatusAccepted), Status: metav1.ConditionTrue,
		Reason: string(gatewayv1.GatewayClassReasonAccepted), Message: "the controller serves this class",
	}, gen, now)
	return want
}

// listenerVerdict is what the spec's listener conditions say of one listener.
type listenerVerdict struct {
	unsupportedProtocol bool
	// unavailable is PortUnavailable or UnsupportedProtocol when Kong serves no listen for
	// the listener (gatewayapi_listens.go), "" when it does or is not asked.
	unavailable        gatewayv1.ListenerConditionReason
	unavailableMessage string
	invalidKinds       bool
	// conflict is ProtocolConflict or HostnameConflict, "" for none.
	conflict gatewayv1.ListenerConditionReason
	// refs is the ResolvedRefs reason of its certificateRefs ("" when they resolve), and
	// refsMessage says why.
	refs        gatewayv1.ListenerConditionReason
	refsMessage string
}

func (v listenerVerdict) valid() bool {
	return !v.unsupportedProtocol && v.unavailable == "" && !v.invalidKinds && v.conflict == "" && v.refs == ""
}

// listenerVerdicts judges the listeners of gw. As in KIC, a conflict marks every listener
// that shares the conflicting port (ProtocolConflict) or port and hostname
// (HostnameConflict), not only the later one; a protocol conflict wins over a hostname one.
// certRefs resolves a listener's certificateRefs (gatewayapi.ResolveCertificateRefs); ports
// are those Kong serves (nil: not checked).
func listenerVerdicts(gw *gatewayapi.Gateway, certRefs func(*gatewayv1.Listener) (gatewayv1.ListenerConditionReason, string), ports kongPorts) []listenerVerdict {
	out := make([]listenerVerdict, len(gw.Listeners))
	for i, l := range gw.Listeners {
		out[i] = judgeListener(l, certRefs, ports)
	}
	for i, l := range gw.Listeners {
		for j, m := range gw.Listeners {
			if i == j {
				continue
			}
			switch c := gatewayapi.Conflict(l.Listener, m.Listener); {
			case c == gatewayv1.ListenerReasonProtocolConflict:
				out[i].conflict = c
			case c != "" && out[i].conflict == "":
				out[i].conflict = c
			}
		}
	}
	return out
}

// judgeListener is the verdict on listener l alone (a ListenerSet's carries its conflicts,
// gatewayapi.Listener.Conflict; a Gateway's own are judged together, listenerVerdicts).
func judgeListener(l *gatewayapi.Listener, certRefs func(*gatewayv1.Listener) (gatewayv1.ListenerConditionReason, string), ports kongPorts) listenerVerdict {
	v := listenerVerdict{invalidKinds: l.InvalidKinds, conflict: l.Conflict}
	switch l.Listener.Protocol {
	case gatewayv1.HTTPProtocolType, gatewayv1.HTTPSProtocolType, gatewayv1.TLSProtocolType,
		gatewayv1.TCPProtocolType, gatewayv1.UDPProtocolType:
	default:
		v.unsupportedProtocol = true
	}
	if !v.unsupportedProtocol {
		v.unavailable, v.unavailableMessage = ports.unavailable(l.Listener.Protocol, l.Listener.Port)
	}
	if certRefs != nil {
		v.refs, v.refsMessage = certRefs(l.Listener)
	}
	return v
}

// listenerConditions are the conditions of a listener judged v (Accepted, ResolvedRefs,
// Conflicted, Programmed) in a configuration a gateway took or not (programmed). A conflicted
// listener stays Accepted on a Gateway, where every listener of a conflict is marked, as in
// KIC; a ListenerSet's (conflictRejects), which the spec's precedence set aside, is not
// accepted and not programmed, for the conflict's reason.
func listenerConditions(v listenerVerdict, l *gatewayv1.Listener, programmed, conflictRejects bool) []metav1.Condition {
	accepted := metav1.Condition{Type: string(gatewayv1.ListenerConditionAccepted), Status: metav1.ConditionTrue,
		Reason: string(gatewayv1.ListenerReasonAccepted), Message: "the listener is valid"}
	switch {
	case v.unsupportedProtocol:
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionFalse, string(gatewayv1.ListenerReasonUnsupportedProtocol),
			"protocol "+string(l.Protocol)+" is not supported"
	case v.unavailable != "":
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionFalse, string(v.unavailable), v.unavailableMessage
	}
	resolved := metav1.Condition{Type: string(gatewayv1.ListenerConditionResolvedRefs), Status: metav1.ConditionTrue,
		Reason: string(gatewayv1.ListenerReasonResolvedRefs), Message: "all references resolved"}
	switch {
	case v.invalidKinds:
		resolved.Status, resolved.Reason, resolved.Message = metav1.ConditionFalse, string(gatewayv1.ListenerReasonInvalidRouteKinds),
			"allowedRoutes.kinds names a kind this listener's protocol cannot carry"
	case v.refs != "":
		resolved.Status, resolved.Reason, resolved.Message = metav1.ConditionFalse, string(v.refs), v.refsMessage
	}
	conflicted := metav1.Condition{Type: string(gatewayv1.ListenerConditionConflicted), Status: metav1.ConditionFalse,
		Reason: string(gatewayv1.ListenerReasonNoConflicts), Message: "no conflict"}
	switch v.conflict {
	case gatewayv1.ListenerReasonProtocolConflict:
		conflicted.Status, conflicted.Reason, conflicted.Message = metav1.ConditionTrue, string(v.conflict),
			"another listener on this port has a protocol that cannot share it"
	case gatewayv1.ListenerReasonHostnameConflict:
		conflicted.Status, conflicted.Reason, conflicted.Message = metav1.ConditionTrue, string(v.conflict),
			"another listener on this port has the same hostname"
	}
	prog := metav1.Condition{Type: string(gatewayv1.ListenerConditionProgrammed), Status: metav1.ConditionTrue,
		Reason: string(gatewayv1.ListenerReasonProgrammed), Message: "in the configuration the gateways took"}
	switch {
	case conflictRejects && v.conflict != "" && accepted.Status == metav1.ConditionTrue:
		message := "a listener of higher precedence (the Gateway's, or an older ListenerSet's) keeps this port: " + conflicted.Message
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionFalse, string(v.conflict), message
		prog.Status, prog.Reason, prog.Message = metav1.ConditionFalse, string(v.conflict), message
	case !v.valid():
		prog.Status, prog.Reason, prog.Message = metav1.ConditionFalse, string(gatewayv1.ListenerReasonInvalid), "the listener is not valid"
	case !programmed:
		prog.Status, prog.Reason, prog.Message = metav1.ConditionFalse, string(gatewayv1.ListenerReasonPending), "no gateway has taken the configuration yet"
	}
	return []metav1.Condition{accepted, resolved, conflicted, prog}
}

// gatewayStatus is the status of one of our Gateways: Accepted and Programmed, the
// published addresses (those it requests, judgeAddresses), and per listener its conditions, supportedKinds and attachedRoutes.
// ports are the ports Kong serves (nil: not checked); invalidGateway, when set, is why the Gateway
// is not accepted (its publish-service annotation). programmed says whether a gateway took a
// configuration made from this Gateway's generation.
func gatewayStatus(have gatewayv1.GatewayStatus, gw *gatewayapi.Gateway, certRefs func(*gatewayv1.Listener) (gatewayv1.ListenerConditionReason, string),
	addrs []string, ports kongPorts, invalidGateway string, programmed bool, now time.Time) gatewayv1.GatewayStatus {
	gen := gw.Gateway.Generation
	want := *have.DeepCopy()
	want.Addresses = nil
	requested := judgeAddresses(gw.Gateway.Spec.Addresses, addrs)
	for _, a := range requested.addresses {
		t := gatewayv1.HostnameAddressType
		if isIP(a) {
			t = gatewayv1.IPAddressType
		}
		want.Addresses = append(want.Addresses, gatewayv1.GatewayStatusAddress{Type: &t, Value: a})
	}

	verdicts := listenerVerdicts(gw, certRefs, ports)
	invalid := 0
	listeners := make([]gatewayv1.ListenerStatus, 0, len(gw.Listeners))
	for i, l := range gw.Listeners {
		v := verdicts[i]
		ls := gatewayv1.ListenerStatus{Name: l.Listener.Name}
		for _, old := range have.Listeners {
			if old.Name == l.Listener.Name {
				ls.Conditions = append([]metav1.Condition(nil), old.Conditions...)
			}
		}
		ls.SupportedKinds = append([]gatewayv1.RouteGroupKind{}, l.SupportedKinds...)
		ls.AttachedRoutes = l.AttachedRoutes
		if !v.valid() {
			invalid++
		}
		for _, c := range listenerConditions(v, l.Listener, programmed, false) {
			setCondition(&ls.Conditions, c, gen, now)
		}
		listeners = append(listeners, ls)
	}
	want.Listeners = listeners

	accepted := metav1.Condition{Type: string(gatewayv1.GatewayConditionAccepted), Status: metav1.ConditionTrue,
		Reason: string(gatewayv1.GatewayReasonAccepted), Message: "the Gateway is valid"}
	switch {
	case invalid > 0 && invalid == len(gw.Listeners):
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionFalse, string(gatewayv1.GatewayReasonListenersNotValid), "no listener is valid"
	case invalid > 0:
		accepted.Reason, accepted.Message = string(gatewayv1.GatewayReasonListenersNotValid), "some listeners are not valid"
	}
	if len(requested.unsupported) > 0 {
		accepted.Status, accepted.Reason = metav1.ConditionFalse, string(gatewayv1.GatewayReasonUnsupportedAddress)
		accepted.Message = "spec.addresses: type " + strings.Join(requested.unsupported, ", ") + " is not supported (IPAddress and Hostname are)"
	}
	if invalidGateway != "" {
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionFalse, string(gatewayv1.GatewayReasonInvalid), invalidGateway
	}
	prog := metav1.Condition{Type: string(gatewayv1.GatewayConditionProgrammed), Status: metav1.ConditionTrue,
		Reason: string(gatewayv1.GatewayReasonProgrammed), Message: "in the configuration the gateways took"}
	switch {
	case len(requested.unusable) > 0:
		prog.Status, prog.Reason = metav1.ConditionFalse, string(gatewayv1.GatewayReasonAddressNotUsable)
		prog.Message = "spec.addresses: Kong's proxy is not published at " + strings.Join(requested.unusable, ", ") +
			" (the addresses of its publish Service or --publish-status-address)"
	case !programmed:
		prog.Status, prog.Reason, prog.Message = metav1.ConditionFalse, string(gatewayv1.GatewayReasonPending), "no gateway has taken the configuration yet"
	}
	setCondition(&want.Conditions, accepted, gen, now)
	setCondition(&want.Conditions, prog, gen, now)
	return want
}

// routeParents is the route's status.parents: the entries of other controllers as they are,
// where they are; ours (controllerName) for each parentRef naming one of our Gateways, with
// Accepted and ResolvedRefs; ours for parentRefs the route no longer names (or every one of
// ours when ra is nil: the route names none of our Gateways) removed.
func routeParents(have []gatewayv1.RouteParentStatus, ra *gatewayapi.RouteAttachment, controller string, now time.Time) []gatewayv1.RouteParentStatus {
	var wanted []gatewayv1.RouteParentStatus
	if ra != nil {
		gen := ra.Route.Object.GetGeneration()
		resolved := metav1.Condition{Type: string(gatewayv1.RouteConditionResolvedRefs), Status: metav1.ConditionTrue,
			Reason: string(gatewayv1.RouteReasonResolvedRefs), Message: "all references resolved"}
		if len(ra.RefProblems) > 0 {
			msgs := make([]string, 0, len(ra.RefProblems))
			for _, p := range ra.RefProblems {
				msgs = append(msgs, p.Message)
			}
			resolved.Status, resolved.Reason, resolved.Message = metav1.ConditionFalse, string(ra.RefProblems[0].Reason), strings.Join(msgs, "; ")
		}
		for _, p := range ra.Parents {
			if indexParent(wanted, controller, p.Ref) >= 0 {
				continue // the same parentRef twice: one entry
			}
			ps := gatewayv1.RouteParentStatus{ParentRef: *p.Ref.DeepCopy(), ControllerName: gatewayv1.GatewayController(controller)}
			if i := indexParent(have, controller, p.Ref); i >= 0 {
				ps.Conditions = append([]metav1.Condition(nil), have[i].Conditions...)
			}
			accepted := metav1.Condition{Type: string(gatewayv1.RouteConditionAccepted), Status: metav1.ConditionTrue,
				Reason: string(p.Reason), Message: p.Message}
			if !p.Accepted {
				accepted.Status = metav1.ConditionFalse
			}
			setCondition(&ps.Conditions, accepted, gen, now)
			setCondition(&ps.Conditions, resolved, gen, now)
			wanted = append(wanted, ps)
		}
	}
	return mergeInPlace(have, len(wanted),
		func(h gatewayv1.RouteParentStatus) bool { return string(h.ControllerName) == controller },
		func(h gatewayv1.RouteParentStatus) int { return indexParent(wanted, controller, h.ParentRef) },
		func(i int, _ *gatewayv1.RouteParentStatus) gatewayv1.RouteParentStatus { return wanted[i] }, 0)
}

// mergeInPlace is a status list shared with other controllers (a route's parents, a policy's
// ancestors) with n entries of ours wanted: every entry of have stays where it is, another
// controller's as it is (ours says whether it is ours) and ours as entry(i, it) when it is
// wanted entry i (wantIndex; -1 when not wanted: it goes; each i placed once); the wanted
// entries not placed go last, in their order, as entry(i, nil), while the list is shorter
// than limit (0: no limit). Keeping the order spares a write per round when another
// controller puts its entries after ours.
func mergeInPlace[T any](have []T, n int, ours func(T) bool, wantIndex func(T) int, entry func(i int, have *T) T, limit int) []T {
	out := make([]T, 0, len(have)+n)
	placed := make([]bool, n)
	for k, h := range have {
		if !ours(h) {
			out = append(out, h)
			continue
		}
		if i := wantIndex(h); i >= 0 && !placed[i] {
			out = append(out, entry(i, &have[k]))
			placed[i] = true
		}
	}
	for i := range n {
		if limit > 0 && len(out) >= limit {
			break
		}
		if !placed[i] {
			out = append(out, entry(i, nil))
		}
	}
	return out
}

// indexParent is the index of the entry of controller for ref in ps, or -1.
func indexParent(ps []gatewayv1.RouteParentStatus, controller string, ref gatewayv1.ParentReference) int {
	for i, p := range ps {
		if string(p.ControllerName) == controller && sameParentRef(p.ParentRef, ref) {
			return i
		}
	}
	return -1
}

// sameParentRef compares parentRefs with the API's defaults applied (group
// gateway.networking.k8s.io, kind Gateway), so that an entry the API server defaulted
// matches the reference it came from.
func sameParentRef(a, b gatewayv1.ParentReference) bool {
	norm := func(r gatewayv1.ParentReference) gatewayv1.ParentReference {
		r = *r.DeepCopy()
		if r.Group == nil {
			g := gatewayv1.Group(gatewayapi.Group)
			r.Group = &g
		}
		if r.Kind == nil {
			k := gatewayv1.Kind("Gateway")
			r.Kind = &k
		}
		return r
	}
	return equality.Semantic.DeepEqual(norm(a), norm(b))
}
