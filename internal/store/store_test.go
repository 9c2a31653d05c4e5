package store

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func ingress(ns, name string, class *string, annotation string) *netv1.Ingress {
	ing := &netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	ing.Spec.IngressClassName = class
	if annotation != "" {
		ing.Annotations = map[string]string{IngressClassAnnotation: annotation}
	}
	return ing
}

func ptr(s string) *string { return &s }

func names(ings []*netv1.Ingress) []string {
	var out []string
	for _, i := range ings {
		out = append(out, i.Namespace+"/"+i.Name)
	}
	return out
}

func TestIngressClassFiltering(t *testing.T) {
	objs := []client.Object{
		ingress("a", "spec-kong", ptr("kong"), ""),
		ingress("a", "spec-other", ptr("other"), ""),
		ingress("a", "annotation-kong", nil, "kong"),
		ingress("a", "annotation-wins", ptr("other"), "kong"),
		ingress("a", "annotation-loses", ptr("kong"), "other"),
		ingress("a", "no-class", nil, ""),
	}
	for _, tc := range []struct {
		name  string
		class *netv1.IngressClass
		want  []string
	}{
		{"no IngressClass object", nil, []string{"a/annotation-kong", "a/annotation-wins", "a/spec-kong"}},
		{"kong is not the default", &netv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "kong"}},
			[]string{"a/annotation-kong", "a/annotation-wins", "a/spec-kong"}},
		{"kong is the default", &netv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "kong",
			Annotations: map[string]string{DefaultClassAnnotation: "true"}}},
			[]string{"a/annotation-kong", "a/annotation-wins", "a/no-class", "a/spec-kong"}},
		{"default value must be exactly true", &netv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "kong",
			Annotations: map[string]string{DefaultClassAnnotation: "True"}}},
			[]string{"a/annotation-kong", "a/annotation-wins", "a/spec-kong"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := append([]client.Object{}, objs...)
			if tc.class != nil {
				all = append(all, tc.class)
			}
			s, err := NewForObjects(all, Options{})
			require.NoError(t, err)
			snap, err := s.Snapshot(context.Background())
			require.NoError(t, err)
			require.ElementsMatch(t, tc.want, names(snap.Ingresses))
			require.Equal(t, tc.class != nil && IsDefaultClass(tc.class), snap.IngressClassIsDefault)
		})
	}
}

func TestNamespaceFiltering(t *testing.T) {
	s, err := NewForObjects([]client.Object{
		ingress("a", "x", ptr("kong"), ""),
		ingress("b", "x", ptr("kong"), ""),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "s"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "c", Name: "s"}},
	}, Options{Namespaces: []string{"a"}})
	require.NoError(t, err)
	snap, err := s.Snapshot(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{"a/x"}, names(snap.Ingresses))
	require.Len(t, snap.Services, 1)
	require.Equal(t, "a", snap.Services[0].Namespace)
}

// A kind that cannot be listed fails the whole snapshot: the translator never sees a
// configuration that pretends those objects do not exist (invariant 6).
func TestSnapshotFailsClosed(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New("RBAC: no list"))
	reader := fake.NewClientBuilder().WithScheme(NewScheme()).
		WithObjects(ingress("a", "x", ptr("kong"), "")).
		WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*corev1.SecretList); ok {
				return forbidden
			}
			return c.List(ctx, list, opts...)
		}}).Build()
	snap, err := New(reader, Options{}).Snapshot(context.Background())
	require.Nil(t, snap)
	var le *ListError
	require.ErrorAs(t, err, &le)
	require.Equal(t, "Secret", le.Kind)
	require.Contains(t, err.Error(), "RBAC forbids list/watch on Secret")
}

// Optional kinds whose CRD is absent are never read.
func TestOptionalKindsNotReadWhenAbsent(t *testing.T) {
	reader := fake.NewClientBuilder().WithScheme(NewScheme()).
		WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			gvk, _ := c.GroupVersionKindFor(list)
			if gvk.Group == "configuration.konghq.com" {
				t.Fatalf("listed %s although its CRD is absent", gvk.Kind)
			}
			return c.List(ctx, list, opts...)
		}}).Build()
	_, err := New(reader, Options{Kinds: KindSet{}}).Snapshot(context.Background())
	require.NoError(t, err)
}

func TestStripForCache(t *testing.T) {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "x", Annotations: map[string]string{LastAppliedAnnotation: "{...}", "keep": "me"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Type: "helm.sh/release.v1",
		Data: map[string][]byte{"release": []byte("big")},
	}
	out, err := StripForCache(s)
	require.NoError(t, err)
	got := out.(*corev1.Secret)
	require.Nil(t, got.ManagedFields)
	require.Equal(t, map[string]string{"keep": "me"}, got.Annotations)
	require.Nil(t, got.Data)

	tls := &corev1.Secret{Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": []byte("c")}}
	out, _ = StripForCache(tls)
	require.Equal(t, []byte("c"), out.(*corev1.Secret).Data["tls.crt"], "Kong configuration keeps its data")
}

func TestReadKinds(t *testing.T) {
	require.Equal(t, "IngressClass,Ingress,Service,EndpointSlice,Secret,ConfigMap,Namespace", ReadKinds(nil).String())
	require.True(t, ReadKinds(NewKindSet(KindKongPlugin)).Has(KindKongPlugin))
	require.False(t, ReadKinds(NewKindSet(KindKongPlugin)).Has(KindKongClusterPlugin))
}

// Namespaces are read as metadata: their labels, every Namespace, watched or not (a
// listener's allowedRoutes Selector may admit routes of any namespace it watches, and a
// Gateway's own namespace may be outside --watch-namespace).
func TestNamespaceLabels(t *testing.T) {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"team": "a"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "plain"}},
	}
	st, err := NewForObjects(objs, Options{Namespaces: []string{"plain"}})
	require.NoError(t, err)
	snap, err := st.Snapshot(context.Background())
	require.NoError(t, err)
	require.Equal(t, map[string]string{"team": "a"}, snap.NamespaceLabels["team-a"])
	require.Contains(t, snap.NamespaceLabels, "plain")
	require.Equal(t, "namespaces", KindNamespace.Resource())
	_, isMetadata := KindNamespace.NewObject().(*metav1.PartialObjectMetadata)
	require.True(t, isMetadata, "the informer is a metadata informer")
}

// TestSnapshotOfReadsOnlyTheKindsAsked: a snapshot of some kinds holds those, filtered as a
// whole snapshot filters them, and nothing of the others.
func TestSnapshotOfReadsOnlyTheKindsAsked(t *testing.T) {
	ns := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: "a", Name: name} }
	s, err := NewForObjects([]client.Object{
		&netv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "kong", Annotations: map[string]string{DefaultClassAnnotation: "true"}}},
		ingress("a", "no-class", nil, ""),
		ingress("a", "other", ptr("other"), ""),
		&corev1.Service{ObjectMeta: ns("svc")},
		&corev1.Secret{ObjectMeta: ns("secret")},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "ca", Labels: map[string]string{CACertLabel: "true"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}},
	}, Options{})
	require.NoError(t, err)
	ctx := context.Background()
	whole, err := s.Snapshot(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"a/no-class"}, names(whole.Ingresses))
	require.Len(t, whole.Services, 1)
	require.Len(t, whole.Secrets, 1)
	require.Contains(t, whole.NamespaceLabels, "a")

	all, err := s.SnapshotOf(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, whole, all)

	ingresses, err := s.SnapshotOf(ctx, NewKindSet(KindIngress))
	require.NoError(t, err)
	require.Equal(t, &Snapshot{IngressClass: "kong", IngressClassIsDefault: true, Ingresses: whole.Ingresses}, ingresses)

	gateways, err := s.SnapshotOf(ctx, NewKindSet(KindSecret, KindConfigMap, KindNamespace))
	require.NoError(t, err)
	require.Equal(t, &Snapshot{IngressClass: "kong", IngressClassIsDefault: true, Secrets: whole.Secrets,
		ConfigMaps: whole.ConfigMaps, NamespaceLabels: whole.NamespaceLabels}, gateways)
}

// Objects being deleted (a Terminating Namespace in `kubectl get -o yaml`'s output: a
// deletionTimestamp, its finalizers in spec) are read as the cache reads them, not refused:
// controller-runtime's fake client, under NewForObjects, panics on an object with a
// deletionTimestamp and no metadata.finalizers, which no translation of it needs.
func TestNewForObjectsReadsObjectsBeingDeleted(t *testing.T) {
	deleted := metav1.Now()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "going", DeletionTimestamp: &deleted}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "going", Name: "s", DeletionTimestamp: &deleted}}
	s, err := NewForObjects([]client.Object{ns, svc}, Options{})
	require.NoError(t, err)
	snap, err := s.Snapshot(context.Background())
	require.NoError(t, err)
	require.Len(t, snap.Services, 1)
	require.NotNil(t, snap.Services[0].DeletionTimestamp, "read as it is")
	require.Nil(t, svc.Finalizers, "the caller's objects are not changed")
}
