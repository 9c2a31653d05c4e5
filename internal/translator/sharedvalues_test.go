package translator

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/manifest"
)

// TestSharedValuesAreNotWritten translates and renders every golden case (their annotations
// change the fields that point to shared values: protocols, timeouts, retries, strip_path,
// buffering, regex priority, paths) and checks that the values every entity shares are still
// the defaults: a change made by writing through a field's pointer rather than replacing the
// pointer would have changed every entity's.
func TestSharedValuesAreNotWritten(t *testing.T) {
	eachGoldenCase(t, func(t *testing.T, dir string) {
		renderCase(t, dir)
		assert.Equal(t, "http", sharedHTTP)
		assert.Equal(t, "/", sharedRootPath)
		assert.Equal(t, 80, sharedPort80)
		assert.Equal(t, kongDefaultTimeout, sharedDefaultTimeout)
		assert.Equal(t, 5, sharedRetries)
		assert.Equal(t, 0, sharedZero)
		assert.True(t, sharedTrue)
		assert.False(t, sharedFalse)
	})
}

// TestContentSharesNothingWithTheState: database mode hands State.Content's entities to
// go-database-reconciler, whose file.Get fills defaults into them in place. Everything the
// copy reaches is written over here; the State (its shared values, an upstream's name that is
// its service's host, its tags) must render the same bytes after.
func TestContentSharesNothingWithTheState(t *testing.T) {
	eachGoldenCase(t, func(t *testing.T, dir string) {
		objs, err := manifest.Load(filepath.Join(dir, "in.yaml"))
		require.NoError(t, err)
		state, _ := translateCaseObjects(t, dir, objs)
		want, err := state.DeclarativeConfig()
		require.NoError(t, err)
		scribble(reflect.ValueOf(state.Content()), map[uintptr]bool{})
		got, err := state.DeclarativeConfig()
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "writing over State.Content's copy changed the State")
	})
}

// scribble writes a different value into every settable string, number and bool v reaches.
func scribble(v reflect.Value, seen map[uintptr]bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return
		}
		seen[v.Pointer()] = true
		scribble(v.Elem(), seen)
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		el := v.Elem()
		switch el.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Slice:
			scribble(el, seen) // reached through the interface: written where they are
		default:
			if v.CanSet() { // a value held in the interface (a plugin config's "x": 5): replaced
				c := reflect.New(el.Type()).Elem()
				c.Set(el)
				scribble(c, seen)
				v.Set(c)
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			scribble(v.Field(i), seen)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			scribble(v.Index(i), seen)
		}
	case reflect.Map:
		if v.IsNil() || seen[v.Pointer()] {
			return
		}
		seen[v.Pointer()] = true
		// A map's values cannot be set in place: each is copied, written over and put back,
		// so a map the copy shares with the State (a plugin's config) shows.
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			scribble(e, seen)
			v.SetMapIndex(k, e)
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString("scribbled")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.CanSet() {
			v.SetInt(v.Int() + 12345)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if v.CanSet() {
			v.SetUint(v.Uint() + 123)
		}
	case reflect.Float32, reflect.Float64:
		if v.CanSet() {
			v.SetFloat(v.Float() + 1.5)
		}
	case reflect.Bool:
		if v.CanSet() {
			v.SetBool(!v.Bool())
		}
	}
}
