package dbmode

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/translator"
)

// newKongEdition starts a database-backed emulator of the given edition and a Gateway for it.
func newKongEdition(t *testing.T, edition kongemu.Edition) (*kongemu.Emulator, *Gateway) {
	t.Helper()
	e := kongemu.New(kongemu.Options{Mode: kongemu.Postgres, Edition: edition})
	srv, err := e.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	g, err := New(srv.URL, &http.Client{}, Options{})
	require.NoError(t, err)
	return e, g
}

// withLicense is one app and the license of the KongLicense "kong-license", as the
// translator renders it for an Enterprise gateway.
func withLicense(t *testing.T, payload string) *kongstate.State {
	t.Helper()
	s := forEnterprise(translate(t, objects(apps(1)...)))
	s.Licenses = []*kongstate.License{{
		License: kong.License{ID: kong.String(translator.LicenseID("kong-license")), Payload: kong.String(payload)},
		Object:  kongstate.ObjectRef{Group: "configuration.konghq.com", Version: "v1alpha1", Kind: "KongLicense", Name: "kong-license", UID: string(uid("KongLicense", 1))},
	}}
	return s
}

// On Kong Gateway Enterprise the KongLicense's license is synced as KIC syncs it: created
// under KIC's ID, updated in place when its payload changes, left alone when nothing does.
func TestLicenseSyncedToEnterprise(t *testing.T) {
	e, g := newKongEdition(t, kongemu.Enterprise)
	id := translator.LicenseID("kong-license")

	res, err := g.Apply(ctx, withLicense(t, `{"license":"v1"}`))
	require.NoError(t, err)
	require.Len(t, e.Entities("licenses"), 1)
	require.Equal(t, `{"license":"v1"}`, e.Entity("licenses", id)["payload"])
	require.True(t, hasChange(res, Create, "license", id), "changes: %+v", res.Changes)

	res, err = g.Apply(ctx, withLicense(t, `{"license":"v2"}`))
	require.NoError(t, err)
	require.Equal(t, 1, res.Updates, "changes: %+v", res.Changes)
	require.Zero(t, res.Creates+res.Deletes, "changes: %+v", res.Changes)
	require.Len(t, e.Entities("licenses"), 1)
	require.Equal(t, `{"license":"v2"}`, e.Entity("licenses", id)["payload"])

	mark := e.AuditMark()
	res, err = g.Apply(ctx, withLicense(t, `{"license":"v2"}`))
	require.NoError(t, err)
	require.Zero(t, res.Total(), "changes: %+v", res.Changes)
	require.Empty(t, e.AuditSince(mark), "an unchanged license is not written")
}

// KIC's rule, kept: Kong's licenses have no tags and Kong ignores the tags option on them,
// so every license is listed and one that is not the target's is deleted, a license made
// by hand included; with no KongLicense left, the license goes too.
func TestLicensesNotInTargetAreDeletedAsKICDoes(t *testing.T) {
	e, g := newKongEdition(t, kongemu.Enterprise)
	srv, err := e.Start()
	require.NoError(t, err)
	defer func() { _ = srv.Close() }()
	putJSON(t, srv.URL+"/licenses/9a8f6a44-0000-4000-8000-000000000001", `{"payload":"{\"license\":\"by hand\"}"}`)

	_, err = g.Apply(ctx, withLicense(t, `{"license":"v1"}`))
	require.NoError(t, err)
	licenses := e.Entities("licenses")
	require.Len(t, licenses, 1)
	require.Equal(t, translator.LicenseID("kong-license"), licenses[0]["id"])

	// A round translated before the edition was learned leaves the license alone.
	res, err := g.Apply(ctx, translate(t, objects(apps(1)...)))
	require.NoError(t, err)
	require.Zero(t, res.Total(), "changes: %+v", res.Changes)
	require.Len(t, e.Entities("licenses"), 1)

	res, err = g.Apply(ctx, forEnterprise(translate(t, objects(apps(1)...))))
	require.NoError(t, err)
	require.Equal(t, 1, res.Deletes, "changes: %+v", res.Changes)
	require.Empty(t, e.Entities("licenses"))
}

// forEnterprise marks s as translated for Kong Gateway Enterprise (Options.Enterprise).
func forEnterprise(s *kongstate.State) *kongstate.State {
	s.LicensesKnown = true
	return s
}

// A license Kong refuses (Enterprise checks the payload's signature) is reported on its
// KongLicense and held back alone: go-database-reconciler writes licenses before services,
// and without isolation the refusal would stop every other change (invariant 5).
func TestRefusedLicenseIsIsolated(t *testing.T) {
	e, g := newKongEdition(t, kongemu.Enterprise)
	e.InjectFault(kongemu.Fault{Method: http.MethodPut, PathPrefix: "/licenses", Status: http.StatusBadRequest})

	err := g.Sync(ctx, target(withLicense(t, `{"license":"bad signature"}`)))
	var rej *dataplane.RejectedError
	require.ErrorAs(t, err, &rej)
	require.True(t, rej.RestApplied, "the rest was synced: %v", err)
	require.NotEmpty(t, rej.Entities)
	for _, ent := range rej.Entities {
		require.Equal(t, "KongLicense", ent.Object.Kind, "%+v", ent)
		require.Equal(t, "kong-license", ent.Object.Name, "%+v", ent)
	}
	require.Len(t, e.Entities("services"), 1)
	require.Len(t, e.Entities("routes"), 1)
	require.Empty(t, e.Entities("licenses"))
}

// Kong OSS has no licenses entity: not one license request, even for a target that holds
// a license (which the translator renders only for Enterprise).
func TestNoLicenseRequestToOSS(t *testing.T) {
	e, g := newKongEdition(t, kongemu.Community)
	_, err := g.Apply(ctx, withLicense(t, `{"license":"v1"}`))
	require.NoError(t, err)
	require.Zero(t, e.RequestCount("", "/licenses"))
	require.Zero(t, e.RequestCount("", "/schemas/licenses"))
}

// A database holding what KIC wrote for the license (PUT /licenses/{UUIDv5 of
// "KongLicense:<name>"}) is adopted: zero creates, zero deletes, zero writes.
func TestAdoptsKICLicense(t *testing.T) {
	e, g := newKongEdition(t, kongemu.Enterprise)
	s := withLicense(t, `{"license":"v1"}`)
	writeAsKIC(t, e, s)
	srv, err := e.Start()
	require.NoError(t, err)
	putJSON(t, srv.URL+"/licenses/"+translator.LicenseID("kong-license"), `{"payload":"{\"license\":\"v1\"}"}`)
	_ = srv.Close()

	mark := requireAdopted(t, e, g, s)
	require.Empty(t, e.AuditSince(mark))
	require.Len(t, e.Entities("licenses"), 1)
}

func hasChange(res *Result, op Op, kind, name string) bool {
	for _, c := range res.Changes {
		if c.Op == op && c.Kind == kind && c.Name == name {
			return true
		}
	}
	return false
}

// putJSON writes an entity by hand, as a person or KIC would.
func putJSON(t *testing.T, url, body string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, bytes.NewBufferString(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Less(t, resp.StatusCode, 300, "PUT %s", url)
}
