package gatewayapi

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An allowedRoutes selector admits a namespace by its labels when they are known, and by
// its name alone when the selector reads only kubernetes.io/metadata.name.
func TestSelectorAdmits(t *testing.T) {
	byName := &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "infra"}}
	byNameIn := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}}
	byTeam := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	noTeam := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpDoesNotExist}}}
	bad := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Nope"}}}
	known := map[string]map[string]string{"infra": {"kubernetes.io/metadata.name": "infra", "team": "a"}, "b": {"kubernetes.io/metadata.name": "b"}}
	for _, c := range []struct {
		name   string
		sel    *metav1.LabelSelector
		ns     string
		labels map[string]map[string]string
		want   bool
	}{
		{"name label, labels unknown, that name", byName, "infra", nil, true},
		{"name label, labels unknown, another name", byName, "apps", nil, false},
		{"name label In, labels unknown", byNameIn, "b", nil, true},
		{"name label In, labels unknown, not listed", byNameIn, "c", nil, false},
		{"other label, labels unknown", byTeam, "infra", nil, false},
		{"other label absent, labels unknown: not guessed", noTeam, "infra", nil, false},
		{"other label, labels known", byTeam, "infra", known, true},
		{"other label, labels known, not matching", byTeam, "b", known, false},
		{"other label absent, labels known", noTeam, "b", known, true},
		{"invalid selector", bad, "infra", known, false},
	} {
		require.Equal(t, c.want, selectorAdmits(c.sel, c.ns, c.labels), c.name)
	}
}
