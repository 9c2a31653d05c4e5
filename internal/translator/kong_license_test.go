package translator

import (
	"testing"
	"time"

	"github.com/kong/go-kong/kong"
	kongv1alpha1 "github.com/kong/kubernetes-configuration/api/configuration/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/konductor/konductor/internal/store"
)

func TestChooseLicenseIsKICs(t *testing.T) {
	at := func(name string, year int, enabled bool) *kongv1alpha1.KongLicense {
		return &kongv1alpha1.KongLicense{ObjectMeta: metav1.ObjectMeta{Name: name,
			CreationTimestamp: metav1.NewTime(time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC))}, Enabled: enabled}
	}
	for _, tc := range []struct {
		name     string
		licenses []*kongv1alpha1.KongLicense
		want     string
	}{
		{"none", nil, ""},
		{"only disabled", []*kongv1alpha1.KongLicense{at("a", 2026, false)}, ""},
		{"newest enabled wins", []*kongv1alpha1.KongLicense{at("new", 2026, true), at("old", 2025, true), at("newer-off", 2027, false)}, "new"},
		{"equally new: first by name", []*kongv1alpha1.KongLicense{at("b", 2026, true), at("a", 2026, true)}, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ChooseLicense(tc.licenses)
			if tc.want == "" {
				assert.Nil(t, got)
				return
			}
			if assert.NotNil(t, got) {
				assert.Equal(t, tc.want, got.Name)
			}
		})
	}
}

func TestLicenseIDIsUUIDv5OfTheNilNamespace(t *testing.T) {
	// KIC: uuid.NewSHA1(uuid.Nil, []byte("KongLicense:"+name)); stable across runs and
	// different per name.
	assert.Equal(t, LicenseID("license-2026"), LicenseID("license-2026"))
	assert.NotEqual(t, LicenseID("a"), LicenseID("b"))
	assert.Equal(t, "a88e1c68-83d8-55b8-b3e9-c661f64e91eb", LicenseID("license-2026"))
}

// Licenses are managed only for Kong Gateway Enterprise and only once the cluster holds a
// KongLicense (enabled or not): without one, database mode leaves the licenses Kong holds as
// they are (KIC deletes them; a license put in by hand would be lost on switching).
func TestLicensesKnownOnlyForEnterpriseWithKongLicenses(t *testing.T) {
	none := &store.Snapshot{}
	assert.False(t, Build(none, Options{Enterprise: true}).State.LicensesKnown)
	assert.False(t, Build(none, Options{}).State.LicensesKnown)

	disabled := &store.Snapshot{KongLicenses: []*kongv1alpha1.KongLicense{{
		ObjectMeta: metav1.ObjectMeta{Name: "old"}, RawLicenseString: "{}", Enabled: false,
	}}}
	res := Build(disabled, Options{Enterprise: true})
	assert.True(t, res.State.LicensesKnown)
	assert.Empty(t, res.State.Licenses)
	assert.False(t, Build(disabled, Options{}).State.LicensesKnown)
}

// With Konnect licensing the license is Konnect's and KongLicense objects are not read (KIC
// does not run its KongLicense controller then); while Konnect gave none, licenses are not
// managed; Kong OSS gets none.
func TestKonnectLicenseReplacesKongLicenses(t *testing.T) {
	snap := &store.Snapshot{KongLicenses: []*kongv1alpha1.KongLicense{{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, RawLicenseString: `{"license":"cluster"}`, Enabled: true,
	}}}
	konnect := &kong.License{ID: kong.String("konnect-id"), Payload: kong.String(`{"license":"konnect"}`)}
	res := Build(snap, Options{Enterprise: true, KonnectLicensing: true, KonnectLicense: konnect})
	require.Len(t, res.State.Licenses, 1)
	assert.Equal(t, "konnect-id", *res.State.Licenses[0].ID)
	assert.Equal(t, `{"license":"konnect"}`, *res.State.Licenses[0].Payload)
	assert.True(t, res.State.LicensesKnown)

	none := Build(snap, Options{Enterprise: true, KonnectLicensing: true})
	assert.Empty(t, none.State.Licenses, "the KongLicense is not read")
	assert.False(t, none.State.LicensesKnown)
	assert.Empty(t, Build(snap, Options{KonnectLicensing: true, KonnectLicense: konnect}).State.Licenses, "Kong OSS")
	assert.Len(t, Build(snap, Options{Enterprise: true}).State.Licenses, 1, "without Konnect licensing the KongLicense")
}
