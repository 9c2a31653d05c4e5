package translator

import (
	"github.com/google/uuid"
	"github.com/kong/go-kong/kong"
	kongv1alpha1 "github.com/kong/kubernetes-configuration/api/configuration/v1alpha1"

	"github.com/konductor/konductor/internal/kongstate"
)

// ChooseLicense is the KongLicense KIC applies (its license controller): among the enabled
// ones, the newest by creationTimestamp, and of equally new ones the first by name. nil when
// none is enabled.
func ChooseLicense(licenses []*kongv1alpha1.KongLicense) *kongv1alpha1.KongLicense {
	var chosen *kongv1alpha1.KongLicense
	for _, l := range licenses {
		if l == nil || !l.Enabled {
			continue
		}
		if chosen == nil || newerLicense(l, chosen) {
			chosen = l
		}
	}
	return chosen
}

// newerLicense is KIC's compareKongLicense: a is newer than b, or as new with a smaller name.
func newerLicense(a, b *kongv1alpha1.KongLicense) bool {
	if a.CreationTimestamp.After(b.CreationTimestamp.Time) {
		return true
	}
	if b.CreationTimestamp.After(a.CreationTimestamp.Time) {
		return false
	}
	return a.Name < b.Name
}

// LicenseID is the ID KIC gives the licenses entity of a KongLicense:
// UUIDv5(nil UUID, "KongLicense:<name>").
func LicenseID(name string) string {
	return uuid.NewSHA1(uuid.Nil, []byte("KongLicense:"+name)).String()
}

// license renders the chosen KongLicense as Kong's licenses entity {id, payload}, only for
// Kong Gateway Enterprise (Options.Enterprise): Kong OSS has no licenses entity and would
// refuse the whole DB-less configuration over it, so an OSS gateway gets none, as in KIC.
func (b *builder) license() {
	if b.opts.KonnectLicensing {
		if l := b.opts.KonnectLicense; b.opts.Enterprise && l != nil {
			b.state.LicensesKnown = true
			b.state.Licenses = append(b.state.Licenses, &kongstate.License{License: *l.DeepCopy()})
		}
		return
	}
	if !b.opts.Enterprise || len(b.snap.KongLicenses) == 0 {
		// Without a KongLicense the cluster does not manage licenses: database mode leaves
		// Kong's as they are (KIC would delete them, a license put in by hand included).
		return
	}
	b.state.LicensesKnown = true
	l := ChooseLicense(b.snap.KongLicenses)
	if l == nil {
		return
	}
	b.state.Licenses = append(b.state.Licenses, &kongstate.License{
		License: kong.License{ID: kong.String(LicenseID(l.Name)), Payload: kong.String(l.RawLicenseString)},
		Object:  kongstate.RefFor(l, gvkKongLicense),
	})
}
