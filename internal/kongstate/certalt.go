package kongstate

import (
	"encoding/json"

	"github.com/kong/go-database-reconciler/pkg/utils"
)

// CertificateAlt is a certificate's alternative pair: Kong serves cert/key or
// cert_alt/key_alt, whichever the client supports (an RSA and an ECDSA certificate for the
// same names; a Gateway listener with two certificateRefs).
type CertificateAlt struct {
	Cert, Key string
}

// withCertificateAlts adds cert_alt and key_alt to the certificates of a DB-less body that
// have an alternative pair. A body without any is returned as it is (byte for byte); one
// with some has its keys re-ordered, as withCustomEntities does, which Kong does not mind.
func withCertificateAlts(body []byte, alts map[string]CertificateAlt) ([]byte, error) {
	if len(alts) == 0 {
		return body, nil
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	var certs []map[string]any
	if raw, ok := doc["certificates"]; ok {
		if err := json.Unmarshal(raw, &certs); err != nil {
			return nil, err
		}
	}
	for _, c := range certs {
		id, _ := c["id"].(string)
		if alt, ok := alts[id]; ok {
			c["cert_alt"], c["key_alt"] = alt.Cert, alt.Key
		}
	}
	raw, err := json.Marshal(certs)
	if err != nil {
		return nil, err
	}
	doc["certificates"] = raw
	return json.Marshal(doc)
}

// SetCertificateAlts gives the certificates of a database-mode target state their
// alternative pairs (decK's file format drops them on the way).
func (s *State) SetCertificateAlts(target *utils.KongRawState) {
	if s == nil || target == nil {
		return
	}
	for _, c := range target.Certificates {
		if c == nil || c.ID == nil {
			continue
		}
		if alt, ok := s.CertificateAlts[*c.ID]; ok {
			c.CertAlt, c.KeyAlt = &alt.Cert, &alt.Key
		}
	}
}
