package translator

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/store"
)

// objectType is client.Object's type, for the tests that walk store.Snapshot's fields.
var objectType = reflect.TypeFor[client.Object]()

// followedByIndexes are the store.Snapshot fields an Incremental round finds changes in by
// its own indexes (or, for SecretsPending, never reads), Seq and Changes the Follower's
// bookkeeping: othersUnchanged compares every other field.
var followedByIndexes = map[string]bool{
	"Ingresses": true, "Services": true, "EndpointSlices": true, "Secrets": true, "SecretsPending": true, "ConfigMapsPending": true,
	"KongConsumers": true, "KongPlugins": true, "KongClusterPlugins": true,
	"HTTPRoutes": true, "GRPCRoutes": true, "TCPRoutes": true, "UDPRoutes": true, "TLSRoutes": true,
	"Seq": true, "Changes": true,
}

// everyChangeMatters is the relevance rule before any translation: no graph, every
// reference counts.
var everyChangeMatters = relevanceRule{class: store.DefaultIngressClass}

// TestOthersUnchangedComparesEveryOtherField: for each field of store.Snapshot, two snapshots
// that differ in that field only (an object added, a value set) are told apart by
// othersUnchanged, unless an index follows the field. A field added to store.Snapshot and
// compared nowhere fails here: a change of it would keep the previous round's translation.
func TestOthersUnchangedComparesEveryOtherField(t *testing.T) {
	st := reflect.TypeFor[store.Snapshot]()
	for i := 0; i < st.NumField(); i++ {
		f := st.Field(i)
		var a, b store.Snapshot
		v := reflect.ValueOf(&b).Elem().Field(i)
		switch {
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Implements(objectType):
			o := reflect.New(f.Type.Elem().Elem())
			o.Interface().(client.Object).SetName("x")
			v.Set(reflect.Append(v, o))
		case f.Type.Kind() == reflect.Pointer && f.Type.Implements(objectType):
			o := reflect.New(f.Type.Elem())
			o.Interface().(client.Object).SetName("x")
			v.Set(o)
		case f.Type.Kind() == reflect.String:
			v.SetString("x")
		case f.Type.Kind() == reflect.Bool:
			v.SetBool(true)
		case f.Name == "NamespaceLabels":
			v.Set(reflect.ValueOf(map[string]map[string]string{"ns": {"a": "b"}}))
		case followedByIndexes[f.Name]:
			continue
		default:
			t.Fatalf("store.Snapshot.%s (%s): this test does not know how to change it", f.Name, f.Type)
		}
		require.Equal(t, followedByIndexes[f.Name], othersUnchanged(&a, &b, nil, everyChangeMatters), "store.Snapshot.%s", f.Name)
		if f.Type.Kind() != reflect.Slice || followedByIndexes[f.Name] {
			continue
		}
		// The same change, said by a change set that follows the kind (a Follower's): told
		// apart from what it says, not from the lists.
		kind, known := store.KindNamed(f.Type.Elem().Elem().Name())
		require.True(t, known, "store.Snapshot.%s", f.Name)
		a.Seq = 1
		said := store.NewChanges(1, store.NewKindSet(kind), map[store.Kind]map[types.NamespacedName]client.Object{
			kind: {{Name: "x"}: v.Index(0).Interface().(client.Object)}})
		require.False(t, othersUnchanged(&a, &b, said, everyChangeMatters), "store.Snapshot.%s changed, as a change set says", f.Name)
		require.True(t, othersUnchanged(&a, &b, store.NewChanges(1, store.NewKindSet(kind), nil), everyChangeMatters),
			"store.Snapshot.%s: a change set that says nothing of it changed is believed, the lists are not compared", f.Name)
		require.False(t, othersUnchanged(&a, &b, store.NewChanges(1, store.NewKindSet(), nil), everyChangeMatters),
			"store.Snapshot.%s: a change set that does not follow the kind leaves the lists to compare", f.Name)
	}
}
