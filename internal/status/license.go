package status

import (
	"context"
	"fmt"

	kongv1alpha1 "github.com/kong/kubernetes-configuration/api/configuration/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/translator"
)

// LicenseControllerType is the first part of the controllerName KIC writes in a
// KongLicense's status.controllers[] (its license controller); the election ID follows.
const LicenseControllerType = "konghq.com/kong-ingress-controller"

// Reasons KIC gives a KongLicense's Programmed condition.
const (
	ReasonPickedAsLatest  = "PickedAsLatest"
	ReasonReplacedByNewer = "ReplacedByNewer"
)

// LicenseControllerName is the controllerName of a KongLicense's status.controllers[] entry:
// KIC's, "konghq.com/kong-ingress-controller/<election ID>", so that konductor takes over the
// entry KIC wrote rather than adding one.
func LicenseControllerName(electionID string) string {
	if electionID == "" {
		return LicenseControllerType
	}
	return LicenseControllerType + "/" + electionID
}

// licenseCondition is the Programmed condition of an enabled KongLicense: True (KIC's
// PickedAsLatest) for the one applied when it is in a configuration a gateway took; False
// (ReplacedByNewer) for the others, as KIC; Unknown while the chosen one reaches no gateway
// (no Kong Enterprise, or only database-backed gateways).
func (o *outcome) licenseCondition(l, chosen *kongv1alpha1.KongLicense) metav1.Condition {
	c := metav1.Condition{Type: ConditionProgrammed, ObservedGeneration: l.Generation}
	switch {
	case chosen == nil || chosen.Name != l.Name:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonReplacedByNewer, "Replaced by newer created KongLicense"
	case o.programmed[objgraph.Key(kongstate.RefFor(l, gvkOf(l)))]:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonPickedAsLatest
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, ReasonPending,
			"no DB-less Kong Gateway Enterprise took it (Kong OSS has no licenses)"
	}
	return c
}

// updateLicenses writes the Programmed condition of the enabled KongLicenses in this
// controller's status.controllers[] entry, where it differs. Disabled ones are not this
// controller's (KIC does not reconcile them either). It returns the failures.
func (u *ProgrammedUpdater) updateLicenses(ctx context.Context, o *outcome, licenses []*kongv1alpha1.KongLicense) []string {
	chosen := translator.ChooseLicense(licenses)
	name := u.LicenseControllerName
	if name == "" {
		name = LicenseControllerName("")
	}
	var errs []string
	for _, l := range licenses {
		if l == nil || !l.Enabled {
			continue
		}
		want := o.licenseCondition(l, chosen)
		idx := -1
		for i, cs := range l.Status.KongLicenseControllerStatuses {
			if cs.ControllerName == name {
				idx = i
			}
		}
		if idx >= 0 {
			cur := meta.FindStatusCondition(l.Status.KongLicenseControllerStatuses[idx].Conditions, ConditionProgrammed)
			if cur != nil && cur.Status == want.Status && cur.Reason == want.Reason && cur.Message == want.Message &&
				cur.ObservedGeneration == want.ObservedGeneration {
				continue
			}
		}
		updated := l.DeepCopy() // the snapshot's objects belong to the cache
		patch := client.MergeFrom(l)
		if idx < 0 {
			updated.Status.KongLicenseControllerStatuses = append(updated.Status.KongLicenseControllerStatuses,
				kongv1alpha1.KongLicenseControllerStatus{ControllerName: name})
			idx = len(updated.Status.KongLicenseControllerStatuses) - 1
		}
		want.LastTransitionTime = metav1.NewTime(u.now())
		meta.SetStatusCondition(&updated.Status.KongLicenseControllerStatuses[idx].Conditions, want)
		if err := u.writeStatus(ctx, updated, patch); err != nil {
			errs = append(errs, fmt.Sprintf("KongLicense %s: %v", l.Name, err))
		}
	}
	return errs
}
