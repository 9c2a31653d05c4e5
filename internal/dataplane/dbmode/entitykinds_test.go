package dbmode

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/kong/go-database-reconciler/pkg/state"
	"github.com/kong/go-database-reconciler/pkg/utils"
	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"
)

// oneOfEveryKind is a dump with one entity in every list of utils.KongRawState whose
// entities have an ID (found by reflection, so that a kind go-database-reconciler adds is in
// it too), each foreign key naming the entity of that type and every other string field set.
func oneOfEveryKind(t *testing.T) *utils.KongRawState {
	t.Helper()
	idOf := func(typ reflect.Type) *string { s := "id-" + typ.Name(); return &s }
	hasID := func(typ reflect.Type) bool {
		f, ok := typ.FieldByName("ID")
		return ok && f.Type == reflect.TypeFor[*string]()
	}
	var fill func(v reflect.Value, owner reflect.Type)
	fill = func(v reflect.Value, owner reflect.Type) {
		for j := range v.NumField() {
			f := v.Type().Field(j)
			switch {
			case f.Anonymous && f.Type.Kind() == reflect.Struct:
				fill(v.Field(j), owner) // BasicAuthOptions embeds BasicAuth
			case f.Type == reflect.TypeFor[*string]():
				s := f.Name + "-of-" + owner.Name() // indexes refuse empty keys (a key-auth's key)
				v.Field(j).Set(reflect.ValueOf(&s))
			case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct && hasID(f.Type.Elem()):
				ref := reflect.New(f.Type.Elem())
				ref.Elem().FieldByName("ID").Set(reflect.ValueOf(idOf(f.Type.Elem())))
				v.Field(j).Set(ref)
			case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Pointer &&
				f.Type.Elem().Elem().Kind() == reflect.Struct && !hasID(f.Type.Elem().Elem()):
				item := reflect.New(f.Type.Elem().Elem()) // a filter chain needs a filter
				fill(item.Elem(), owner)
				v.Field(j).Set(reflect.Append(v.Field(j), item))
			}
		}
	}
	raw := &utils.KongRawState{}
	v := reflect.ValueOf(raw).Elem()
	for i := range v.NumField() {
		list := v.Field(i)
		if list.Kind() != reflect.Slice || list.Type().Elem().Kind() != reflect.Pointer {
			continue
		}
		typ := list.Type().Elem().Elem()
		if typ.Kind() != reflect.Struct || !hasID(typ) {
			continue
		}
		e := reflect.New(typ)
		fill(e.Elem(), typ)
		if r := e.Elem().FieldByName("Route"); typ == reflect.TypeFor[kong.FilterChain]() {
			r.SetZero() // a filter chain belongs to a service or a route
		}
		e.Elem().FieldByName("ID").Set(reflect.ValueOf(idOf(typ)))
		list.Set(reflect.Append(list, e))
	}
	return raw
}

// rawEntityKeys reads a dump's lists for the keys that entities gives the same dump indexed:
// the two name the kinds isolation knows separately, and must not drift apart (a kind only
// entities knew would be deleted, not kept, when its object is refused).
func TestRawEntityKeysAreTheKeysOfEntities(t *testing.T) {
	raw := oneOfEveryKind(t)
	// Consumer groups come with their members (which have no ID: a membership is keyed by
	// its group and consumer).
	require.Len(t, raw.Consumers, 1)
	raw.ConsumerGroups = []*kong.ConsumerGroupObject{{
		ConsumerGroup: &kong.ConsumerGroup{ID: kong.String("id-group"), Name: kong.String("gold")},
		Consumers:     []*kong.Consumer{{ID: raw.Consumers[0].ID, Username: raw.Consumers[0].Username}},
	}}
	ks, err := state.Get(raw)
	require.NoError(t, err)
	ents, err := entities(ks, nil)
	require.NoError(t, err)
	want := slices.Sorted(maps.Keys(ents))
	require.NotEmpty(t, want)
	require.Contains(t, want, membershipKey("id-group", *raw.Consumers[0].ID))
	require.Contains(t, want, "consumer-group/id-group")
	require.Equal(t, want, slices.Sorted(maps.Keys(rawEntityKeys(raw))))
}
