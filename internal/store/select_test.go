package store

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Select and Union cover every object slice of the Snapshot: a kind added to the Snapshot
// and forgotten there would survive a fallback that must leave its objects out.
func TestSelectAndUnionCoverEveryKind(t *testing.T) {
	full := &Snapshot{IngressClass: "kong"}
	v := reflect.ValueOf(full).Elem()
	slices := 0
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.Slice {
			continue
		}
		slices++
		elem := reflect.New(f.Type().Elem().Elem()) // *T
		f.Set(reflect.Append(f, elem))
	}
	none := full.Select(func(schema.GroupVersionKind, client.Object) bool { return false })
	all := full.Select(func(schema.GroupVersionKind, client.Object) bool { return true })
	twice := all.Union(full)
	for i := range v.NumField() {
		if v.Field(i).Kind() != reflect.Slice {
			continue
		}
		name := v.Type().Field(i).Name
		require.Equal(t, 0, reflect.ValueOf(none).Elem().Field(i).Len(), "Select drops %s", name)
		require.Equal(t, 1, reflect.ValueOf(all).Elem().Field(i).Len(), "Select keeps %s", name)
		require.Equal(t, 2, reflect.ValueOf(twice).Elem().Field(i).Len(), "Union adds %s", name)
	}
	require.Positive(t, slices)
	require.Equal(t, "kong", none.IngressClass)
}

// Select keeps every setting of the Snapshot that is not a list of objects (the class, its
// parameters, the Namespaces' labels a listener's selector reads): a fallback or a
// fail-closed translation without them would translate another cluster. Seq and Changes
// describe the Follower's snapshot, not the selection.
func TestSelectKeepsTheSettings(t *testing.T) {
	full := &Snapshot{}
	v := reflect.ValueOf(full).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Slice:
			continue
		case reflect.String:
			f.SetString("x")
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Map:
			f.Set(reflect.MakeMap(f.Type()))
			f.SetMapIndex(reflect.New(f.Type().Key()).Elem(), reflect.New(f.Type().Elem()).Elem())
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Uint64:
			f.SetUint(1)
		default:
			t.Fatalf("a field of kind %s: teach this test", f.Kind())
		}
	}
	sel := reflect.ValueOf(full.Select(func(schema.GroupVersionKind, client.Object) bool { return true })).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if v.Field(i).Kind() == reflect.Slice || name == "Seq" || name == "Changes" {
			continue
		}
		require.Equal(t, v.Field(i).Interface(), sel.Field(i).Interface(), "Select keeps %s", name)
	}
}
