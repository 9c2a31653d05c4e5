package kongstate

import (
	"reflect"
	"testing"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"
)

// Empty is true for a State without an entity: nil, zero, nil entries only, or only
// LicensesKnown or CertificateAlts (no entities of their own). Such a State (CertificateAlts
// aside) renders as the stub upstream alone, what a DB-less gateway is sent for it.
func TestStateEmpty(t *testing.T) {
	for name, s := range map[string]*State{
		"nil":            nil,
		"zero":           {},
		"nil entries":    {Services: []*file.FService{nil}, Plugins: []*file.FPlugin{nil}, Licenses: []*License{nil}},
		"licenses known": {LicensesKnown: true},
	} {
		require.True(t, s.Empty(), name)
		cfg, err := s.DeclarativeConfig()
		require.NoError(t, err)
		require.JSONEq(t, `{"_format_version":"3.0","upstreams":[{"name":"kong"}]}`, string(cfg),
			"%s: the stub alone", name)
	}
	require.True(t, (&State{CustomEntities: []*CustomEntity{nil}}).Empty(), "a nil custom entity is none")
	require.True(t, (&State{CertificateAlts: map[string]CertificateAlt{"id": {}}}).Empty(), "alternative pairs complete certificates")
}

// One entity of any kind makes a State non-empty: every []*T field of State is tried, so
// that a kind added to State later cannot be forgotten by Empty.
func TestStateWithOneEntityIsNotEmpty(t *testing.T) {
	typ := reflect.TypeFor[State]()
	tried := 0
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Type.Kind() != reflect.Slice || f.Type.Elem().Kind() != reflect.Pointer {
			continue
		}
		s := &State{}
		field := reflect.ValueOf(s).Elem().Field(i)
		field.Set(reflect.Append(field, reflect.New(f.Type.Elem().Elem())))
		require.False(t, s.Empty(), "one of %s", f.Name)
		tried++
	}
	require.Equal(t, 10, tried, "every entity kind of State")

	custom := &State{CustomEntities: []*CustomEntity{{Type: "degraphql_routes", Fields: map[string]any{"uri": "/"}}}}
	require.False(t, custom.Empty(), "a custom entity is an entity")
	svc := &State{Services: []*file.FService{{Service: kong.Service{Name: kong.String("s")}}}}
	require.False(t, svc.Empty(), "a service without routes is an entity")
}
