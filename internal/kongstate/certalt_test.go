package kongstate

import (
	"encoding/json"
	"testing"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-database-reconciler/pkg/utils"
	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"
)

// A certificate's alternative pair reaches Kong as cert_alt/key_alt: in the DB-less body
// (also through the Renderer, which must give the same bytes) and in the database-mode
// target state. A certificate without one gets neither field.
func TestCertificateAlts(t *testing.T) {
	s := &State{
		Services:  []*file.FService{{Service: kong.Service{Name: kong.String("svc")}}},
		Upstreams: []*file.FUpstream{{Upstream: kong.Upstream{Name: kong.String("up")}}},
		Certificates: []*file.FCertificate{
			{ID: kong.String("pair"), Cert: kong.String("rsa-cert"), Key: kong.String("rsa-key")},
			{ID: kong.String("single"), Cert: kong.String("cert"), Key: kong.String("key")},
		},
		CertificateAlts: map[string]CertificateAlt{"pair": {Cert: "ecdsa-cert", Key: "ecdsa-key"}},
	}
	body, err := s.DeclarativeConfig()
	require.NoError(t, err)
	var doc struct {
		Certificates []map[string]any `json:"certificates"`
	}
	require.NoError(t, json.Unmarshal(body, &doc))
	byID := map[string]map[string]any{}
	for _, c := range doc.Certificates {
		byID[c["id"].(string)] = c
	}
	require.Equal(t, "ecdsa-cert", byID["pair"]["cert_alt"])
	require.Equal(t, "ecdsa-key", byID["pair"]["key_alt"])
	require.Equal(t, "rsa-cert", byID["pair"]["cert"])
	require.NotContains(t, byID["single"], "cert_alt")

	rendered, err := (&Renderer{}).DeclarativeConfig(s)
	require.NoError(t, err)
	require.Equal(t, string(body), string(rendered))

	target := &utils.KongRawState{Certificates: []*kong.Certificate{
		{ID: kong.String("pair"), Cert: kong.String("rsa-cert")}, {ID: kong.String("single")}, {}}}
	s.SetCertificateAlts(target)
	require.Equal(t, "ecdsa-cert", *target.Certificates[0].CertAlt)
	require.Equal(t, "ecdsa-key", *target.Certificates[0].KeyAlt)
	require.Nil(t, target.Certificates[1].CertAlt)
}
