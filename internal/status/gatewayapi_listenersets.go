package status

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
)

// listenerSetKey names a ListenerSet's generation among the programmed objects, as
// gatewayKey a Gateway's.
func listenerSetKey(ls *gatewayv1.ListenerSet) string {
	return fmt.Sprintf("ListenerSet/%s/%s/%d", ls.Namespace, ls.Name, ls.Generation)
}

// listenerSetStatus is the status of one of our ListenerSets (its parentRef names one of our
// Gateways), and whether it is accepted (what the Gateway's attachedListenerSets counts):
// per listener its conditions, supportedKinds and attachedRoutes, judged as a Gateway's
// listeners are (listenerConditions) but for conflicts, which the spec's precedence decides
// against the set's listener (gatewayapi.Listener.Conflict); then Accepted and Programmed:
// NotAllowed when the Gateway's allowedListeners do not admit it, ParentNotAccepted when the
// Gateway is not accepted, ListenersNotValid (False) when no listener is valid and (True)
// when some are not. certRefs resolves a listener's certificateRefs with the set's
// ReferenceGrants; ports are those Kong serves (nil: not checked); programmed says whether a
// gateway took a configuration made from this generation of the set.
func listenerSetStatus(have gatewayv1.ListenerSetStatus, ls *gatewayapi.ListenerSet, gatewayAccepted bool,
	certRefs func(*gatewayv1.Listener) (gatewayv1.ListenerConditionReason, string), ports kongPorts, programmed bool, now time.Time) (gatewayv1.ListenerSetStatus, bool) {
	gen := ls.ListenerSet.Generation
	want := *have.DeepCopy()
	listeners := make([]gatewayv1.ListenerEntryStatus, 0, len(ls.Listeners))
	valid := 0
	for _, l := range ls.Listeners {
		v := judgeListener(l, certRefs, ports)
		if v.valid() {
			valid++
		}
		es := gatewayv1.ListenerEntryStatus{Name: l.Listener.Name, SupportedKinds: append([]gatewayv1.RouteGroupKind{}, l.SupportedKinds...),
			AttachedRoutes: l.AttachedRoutes}
		for _, old := range have.Listeners {
			if old.Name == l.Listener.Name {
				es.Conditions = append([]metav1.Condition(nil), old.Conditions...)
			}
		}
		for _, c := range listenerConditions(v, l.Listener, programmed && ls.Allowed && gatewayAccepted, true) {
			setCondition(&es.Conditions, c, gen, now)
		}
		listeners = append(listeners, es)
	}
	want.Listeners = listeners

	accepted := metav1.Condition{Type: string(gatewayv1.ListenerSetConditionAccepted), Status: metav1.ConditionTrue,
		Reason: string(gatewayv1.ListenerSetReasonAccepted), Message: msgListenerSetAccepted}
	prog := metav1.Condition{Type: string(gatewayv1.ListenerSetConditionProgrammed), Status: metav1.ConditionTrue,
		Reason: string(gatewayv1.ListenerSetReasonProgrammed), Message: "in the configuration the gateways took"}
	refuse := func(reason gatewayv1.ListenerSetConditionReason, message string) {
		accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionFalse, string(reason), message
		prog.Status, prog.Reason, prog.Message = metav1.ConditionFalse, string(reason), message
	}
	gw := ls.Gateway.Gateway
	switch {
	case !ls.Allowed:
		refuse(gatewayv1.ListenerSetReasonNotAllowed, fmt.Sprintf(msgListenerSetNotAllowed, gw.Namespace, gw.Name))
	case !gatewayAccepted:
		refuse(gatewayv1.ListenerSetReasonParentNotAccepted, fmt.Sprintf(msgListenerSetParentNotAccepted, gw.Namespace, gw.Name))
	case valid == 0:
		refuse(gatewayv1.ListenerSetReasonListenersNotValid, msgListenerSetNoListener)
	default:
		if valid < len(ls.Listeners) {
			accepted.Reason, accepted.Message = string(gatewayv1.ListenerSetReasonListenersNotValid), msgListenerSetSomeListeners
		}
		if !programmed {
			prog.Status, prog.Reason, prog.Message = metav1.ConditionFalse, string(gatewayv1.ListenerSetReasonPending), "no gateway has taken the configuration yet"
		}
	}
	setCondition(&want.Conditions, accepted, gen, now)
	setCondition(&want.Conditions, prog, gen, now)
	return want, accepted.Status == metav1.ConditionTrue
}

// The messages of the Accepted condition konductor writes on a ListenerSet (those with %s/%s
// name its Gateway). A ListenerSet's status has no controllerName (a route's parents entries
// have one): these tell a status konductor wrote from another controller's once the set's
// Gateway is no longer ours (ownsListenerSetStatus).
const (
	msgListenerSetAccepted          = "the ListenerSet's listeners are part of its Gateway"
	msgListenerSetNotAllowed        = "Gateway %s/%s does not allow ListenerSets from this namespace (spec.allowedListeners)"
	msgListenerSetParentNotAccepted = "Gateway %s/%s is not accepted"
	msgListenerSetNoListener        = "no listener is valid"
	msgListenerSetSomeListeners     = "some listeners are not valid"
	msgListenerSetParentNotFound    = "Gateway %s/%s does not exist"
)

// ownsListenerSetStatus reports whether konductor wrote status st: its Accepted condition
// carries one of konductor's messages (for any Gateway: the set's parentRef may have been
// changed since).
func ownsListenerSetStatus(st gatewayv1.ListenerSetStatus) bool {
	c := meta.FindStatusCondition(st.Conditions, string(gatewayv1.ListenerSetConditionAccepted))
	if c == nil {
		return false
	}
	for _, m := range []string{msgListenerSetAccepted, msgListenerSetNotAllowed, msgListenerSetParentNotAccepted,
		msgListenerSetNoListener, msgListenerSetSomeListeners, msgListenerSetParentNotFound} {
		before, after, named := strings.Cut(m, "%s/%s")
		if c.Message == m || named && len(c.Message) > len(before)+len(after) && strings.HasPrefix(c.Message, before) && strings.HasSuffix(c.Message, after) {
			return true
		}
	}
	return false
}

// releasedListenerSetStatus is the status of ListenerSet ls that konductor no longer serves:
// its parentRef names no Gateway of ours (gatewayapi.Attachment.ListenerSet is nil), and
// whether to write it, only when konductor wrote the status it has (ownsListenerSetStatus),
// as a route's parents entries of ours go when the route no longer names one of our
// Gateways. Its listeners' statuses go (konductor serves none of them, their attachedRoutes
// would say otherwise); Accepted and Programmed become, when the Gateway exists
// (parentFound: another controller's class now), what the CRD writes on a set no controller
// has seen, Unknown Pending, for that controller to take up; when it does not exist (deleted),
// False ParentNotAccepted, as for a parent not accepted, naming it.
func releasedListenerSetStatus(ls *gatewayv1.ListenerSet, parentNS, parentName string, parentFound bool, now time.Time) (gatewayv1.ListenerSetStatus, bool) {
	have := ls.Status
	if !ownsListenerSetStatus(have) {
		return have, false
	}
	want := gatewayv1.ListenerSetStatus{Conditions: append([]metav1.Condition(nil), have.Conditions...)}
	status, reason, message := metav1.ConditionUnknown, string(gatewayv1.ListenerSetReasonPending), "Waiting for controller"
	if !parentFound {
		status, reason, message = metav1.ConditionFalse, string(gatewayv1.ListenerSetReasonParentNotAccepted), fmt.Sprintf(msgListenerSetParentNotFound, parentNS, parentName)
	}
	for _, typ := range []gatewayv1.ListenerSetConditionType{gatewayv1.ListenerSetConditionAccepted, gatewayv1.ListenerSetConditionProgrammed} {
		setCondition(&want.Conditions, metav1.Condition{Type: string(typ), Status: status, Reason: reason, Message: message}, ls.Generation, now)
	}
	return want, true
}

// withAttachedListenerSets is a Gateway's status want with status.attachedListenerSets n:
// written once the Gateway has ListenerSets naming it, or had (so that it goes back to 0),
// and left absent on the others, whose status it would only change.
func withAttachedListenerSets(want, have gatewayv1.GatewayStatus, gw *gatewayapi.Gateway, n int32) gatewayv1.GatewayStatus {
	if len(gw.ListenerSets) > 0 || have.AttachedListenerSets != nil {
		want.AttachedListenerSets = &n
	}
	return want
}
