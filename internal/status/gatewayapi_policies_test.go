package status

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
)

// Our ancestors entries follow the verdict and the Gateways; another controller's entries
// stay as they are, first; a condition whose status holds keeps its lastTransitionTime; at
// most 16 entries.
func TestPolicyAncestors(t *testing.T) {
	const us = "konghq.com/kic-gateway-controller"
	t0, t1 := time.Unix(1000, 0), time.Unix(2000, 0)
	accepted := gatewayapi.BackendTLSPolicyVerdict{
		Accepted:     metav1.Condition{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted"},
		ResolvedRefs: metav1.Condition{Type: "ResolvedRefs", Status: metav1.ConditionTrue, Reason: "ResolvedRefs"},
	}
	theirs := gatewayv1.PolicyAncestorStatus{AncestorRef: gatewayv1.ParentReference{Name: "kong"}, ControllerName: "example.com/other",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionFalse, Reason: "Conflicted"}}}

	got := policyAncestors([]gatewayv1.PolicyAncestorStatus{theirs}, []namespacedName{{"ns", "b"}, {"ns", "a"}}, accepted, us, 2, t0)
	require.Len(t, got, 3)
	require.Equal(t, theirs, got[0])
	require.Equal(t, gatewayv1.ObjectName("a"), got[1].AncestorRef.Name, "sorted by name")
	require.Equal(t, "Gateway", string(*got[1].AncestorRef.Kind))
	require.Equal(t, gatewayv1.GroupName, string(*got[1].AncestorRef.Group))
	require.Equal(t, "ns", string(*got[1].AncestorRef.Namespace))
	require.Equal(t, us, string(got[1].ControllerName))
	c := meta.FindStatusCondition(got[1].Conditions, "Accepted")
	require.Equal(t, int64(2), c.ObservedGeneration)

	// The same verdict later: nothing changes (no write).
	again := policyAncestors(got, []namespacedName{{"ns", "a"}, {"ns", "b"}}, accepted, us, 2, t1)
	require.Equal(t, got, again)

	// Gateway b is no ancestor any more, and the policy is conflicted now.
	conflicted := accepted
	conflicted.Accepted = metav1.Condition{Type: "Accepted", Status: metav1.ConditionFalse, Reason: "Conflicted"}
	got = policyAncestors(again, []namespacedName{{"ns", "a"}}, conflicted, us, 3, t1)
	require.Len(t, got, 2)
	require.Equal(t, theirs, got[0])
	c = meta.FindStatusCondition(got[1].Conditions, "Accepted")
	require.Equal(t, "False/Conflicted", string(c.Status)+"/"+c.Reason)
	require.Equal(t, t1.Unix(), c.LastTransitionTime.Unix())
	r := meta.FindStatusCondition(got[1].Conditions, "ResolvedRefs")
	require.Equal(t, t0.Unix(), r.LastTransitionTime.Unix(), "a status that holds keeps its transition time")
	require.Equal(t, int64(3), r.ObservedGeneration)

	// No ancestors: only theirs remains.
	require.Equal(t, []gatewayv1.PolicyAncestorStatus{theirs}, policyAncestors(got, nil, accepted, us, 3, t1))

	// At most 16 entries, theirs counted.
	var many []namespacedName
	for i := range 20 {
		many = append(many, namespacedName{"ns", fmt.Sprintf("g%02d", i)})
	}
	require.Len(t, policyAncestors([]gatewayv1.PolicyAncestorStatus{theirs}, many, accepted, us, 1, t0), 16)
}
