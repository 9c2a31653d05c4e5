package translator

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/manifest"
	"github.com/konductor/konductor/internal/store"
)

// asServed adds to obj what an API server and kubectl add to what a user applies and the
// translation never reads: managedFields, kubectl's last-applied annotation, and a Service's
// defaulted and allocated fields. The cache transform drops them.
func asServed(obj client.Object) {
	obj.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, APIVersion: obj.GetObjectKind().GroupVersionKind().GroupVersion().String(), FieldsType: "FieldsV1",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{}}`)}}})
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[store.LastAppliedAnnotation] = `{"apiVersion":"v1"}`
	obj.SetAnnotations(ann)
	if svc, ok := obj.(*corev1.Service); ok {
		policy, cluster := corev1.IPFamilyPolicySingleStack, corev1.ServiceInternalTrafficPolicyCluster
		svc.Spec.Selector = map[string]string{"app": svc.Name}
		svc.Spec.ClusterIPs = []string{"10.96.0.10"}
		svc.Spec.IPFamilies, svc.Spec.IPFamilyPolicy = []corev1.IPFamily{corev1.IPv4Protocol}, &policy
		svc.Spec.SessionAffinity, svc.Spec.InternalTrafficPolicy = corev1.ServiceAffinityNone, &cluster
	}
}

// Every golden case translates the same whether its objects come as an API server serves
// them or as the cache keeps them (store.StripForCache): the cache transform drops nothing
// that translation reads. A translation that starts reading a dropped field fails here.
func TestGoldenCasesTranslateTheSameAfterTheCacheTransform(t *testing.T) {
	eachGoldenCase(t, func(t *testing.T, dir string) {
		served, err := manifest.Load(filepath.Join(dir, "in.yaml"))
		require.NoError(t, err)
		cached := make([]client.Object, 0, len(served))
		for _, obj := range served {
			asServed(obj)
			out, err := store.StripForCache(obj.DeepCopyObject())
			require.NoError(t, err)
			cached = append(cached, out.(client.Object))
		}
		wantConfig, wantProblems := renderObjects(t, dir, served)
		gotConfig, gotProblems := renderObjects(t, dir, cached)
		require.Equal(t, wantConfig, gotConfig)
		require.Equal(t, wantProblems, gotProblems)
	})
}
