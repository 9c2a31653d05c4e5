package status

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	kongv1alpha1 "github.com/kong/kubernetes-configuration/api/configuration/v1alpha1"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// KongCustomEntity gets the Programmed condition like the other Kong kinds, once a DB-less
// gateway took it; KongLicense gets it in KIC's status.controllers[] entry: PickedAsLatest for
// the applied one, ReplacedByNewer for the other enabled ones, nothing for disabled ones.
func TestProgrammedCustomEntitiesAndLicenses(t *testing.T) {
	ctx := context.Background()
	at := func(y int) metav1.Time { return metav1.NewTime(time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)) }
	objs := []client.Object{
		&kongv1alpha1.KongCustomEntity{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "route", UID: "u-ce", Generation: 2},
			Spec: kongv1alpha1.KongCustomEntitySpec{EntityType: "degraphql_routes", ControllerName: "kong",
				Fields: apiextensionsv1.JSON{Raw: []byte(`{"uri":"/a","query":"q"}`)}}},
		&kongv1alpha1.KongCustomEntity{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "core", UID: "u-core", Generation: 1},
			Spec: kongv1alpha1.KongCustomEntitySpec{EntityType: "services", ControllerName: "kong", Fields: apiextensionsv1.JSON{Raw: []byte(`{}`)}}},
		&kongv1alpha1.KongLicense{ObjectMeta: metav1.ObjectMeta{Name: "new", UID: "u-new", CreationTimestamp: at(2026), Generation: 1}, RawLicenseString: "{}", Enabled: true},
		&kongv1alpha1.KongLicense{ObjectMeta: metav1.ObjectMeta{Name: "old", UID: "u-old", CreationTimestamp: at(2025), Generation: 1}, RawLicenseString: "{}", Enabled: true},
		&kongv1alpha1.KongLicense{ObjectMeta: metav1.ObjectMeta{Name: "off", UID: "u-off", CreationTimestamp: at(2027), Generation: 1}, RawLicenseString: "{}"},
	}
	c := fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(objs...).
		WithStatusSubresource(&kongv1alpha1.KongCustomEntity{}, &kongv1alpha1.KongLicense{}).Build()
	st := store.New(c, store.Options{IngressClass: "kong", Kinds: store.NewKindSet(store.AllKinds()...)})
	snap, err := st.Snapshot(ctx)
	require.NoError(t, err)
	schema := map[string]any{"fields": []any{map[string]any{"uri": map[string]any{"type": "string"}}}}
	state, problems := translator.Translate(snap, translator.Options{Enterprise: true,
		EntitySchemas: map[string]translator.EntitySchemaAnswer{"degraphql_routes": {Schema: schema}}})

	u := NewProgrammedUpdater(st, c, logr.Discard())
	u.LicenseControllerName = LicenseControllerName("5b374a9e.konghq.com")
	u.Report(ctx, dataplane.Round{State: state, Problems: problems,
		Gateways: []dataplane.GatewayResult{{URL: "http://kong", Protocol: dataplane.ProtocolDBLess}}})
	require.NoError(t, u.Update(ctx))

	ce := programmed(t, c, &kongv1alpha1.KongCustomEntity{}, "route")
	require.Equal(t, metav1.ConditionTrue, ce.Status)
	require.EqualValues(t, 2, ce.ObservedGeneration)
	core := programmed(t, c, &kongv1alpha1.KongCustomEntity{}, "core")
	require.Equal(t, metav1.ConditionFalse, core.Status)
	require.Equal(t, "spec.type: cannot use known entity type services in custom entity", core.Message)

	license := func(name string) *metav1.Condition {
		var l kongv1alpha1.KongLicense
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: name}, &l))
		for _, cs := range l.Status.KongLicenseControllerStatuses {
			if cs.ControllerName == "konghq.com/kong-ingress-controller/5b374a9e.konghq.com" {
				return meta.FindStatusCondition(cs.Conditions, ConditionProgrammed)
			}
		}
		return nil
	}
	require.Equal(t, ReasonPickedAsLatest, license("new").Reason)
	require.Equal(t, metav1.ConditionTrue, license("new").Status)
	require.Equal(t, ReasonReplacedByNewer, license("old").Reason)
	require.Equal(t, metav1.ConditionFalse, license("old").Status)
	require.Nil(t, license("off"), "a disabled KongLicense is not this controller's")

	// Database-backed gateways get neither: the applied license and the custom entity wait.
	u.Report(ctx, dataplane.Round{State: state, Problems: problems,
		Gateways: []dataplane.GatewayResult{{URL: "http://kong", Protocol: dataplane.ProtocolDeck}}})
	require.NoError(t, u.Update(ctx))
	require.Equal(t, metav1.ConditionUnknown, license("new").Status)
	require.Equal(t, "custom entities are sent to DB-less gateways only", programmed(t, c, &kongv1alpha1.KongCustomEntity{}, "route").Message)

	// With Konnect licensing (NoLicenses) the KongLicenses are not this controller's: left as
	// they are, while the other kinds still get their condition.
	u.NoLicenses = true
	u.Report(ctx, dataplane.Round{State: state, Problems: problems,
		Gateways: []dataplane.GatewayResult{{URL: "http://kong", Protocol: dataplane.ProtocolDBLess}}})
	require.NoError(t, u.Update(ctx))
	require.Equal(t, metav1.ConditionUnknown, license("new").Status, "untouched")
	require.Equal(t, metav1.ConditionTrue, programmed(t, c, &kongv1alpha1.KongCustomEntity{}, "route").Status)
}

// A gateway that refused a configuration and then took the fallback one (without the refused
// objects and their dependents) programs the others; the excluded ones are not Programmed.
func TestProgrammedAfterAFallbackConfiguration(t *testing.T) {
	ctx := context.Background()
	ce := func(name string) *kongv1alpha1.KongCustomEntity {
		return &kongv1alpha1.KongCustomEntity{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("u-" + name)},
			Spec: kongv1alpha1.KongCustomEntitySpec{EntityType: "degraphql_routes", ControllerName: "kong",
				Fields: apiextensionsv1.JSON{Raw: []byte(`{"uri":"/` + name + `"}`)}}}
	}
	c := fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(ce("good"), ce("bad")).
		WithStatusSubresource(&kongv1alpha1.KongCustomEntity{}).Build()
	st := store.New(c, store.Options{IngressClass: "kong", Kinds: store.NewKindSet(store.AllKinds()...)})
	snap, err := st.Snapshot(ctx)
	require.NoError(t, err)
	state, problems := translator.Translate(snap, translator.Options{
		EntitySchemas: map[string]translator.EntitySchemaAnswer{"degraphql_routes": {Schema: map[string]any{}}}})
	require.Len(t, state.CustomEntities, 2)
	bad := state.CustomEntities[0].Object
	require.Equal(t, "bad", bad.Name)

	u := NewProgrammedUpdater(st, c, logr.Discard())
	u.Report(ctx, dataplane.Round{State: state, Problems: problems, Gateways: []dataplane.GatewayResult{{
		URL: "http://kong", Protocol: dataplane.ProtocolDBLess,
		Err:      &dataplane.RejectedError{Entities: []dataplane.EntityError{{Object: bad, Field: "query", Message: "required field missing"}}},
		Fallback: &dataplane.FallbackResult{Broken: []kongstate.ObjectRef{bad}, Excluded: []kongstate.ObjectRef{bad}},
	}}})
	require.NoError(t, u.Update(ctx))
	require.Equal(t, metav1.ConditionTrue, programmed(t, c, &kongv1alpha1.KongCustomEntity{}, "good").Status)
	badCond := programmed(t, c, &kongv1alpha1.KongCustomEntity{}, "bad")
	require.Equal(t, metav1.ConditionFalse, badCond.Status)
	require.Equal(t, "Kong refused it: invalid query: required field missing", badCond.Message)
}
