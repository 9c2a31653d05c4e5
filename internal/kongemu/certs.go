package kongemu

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"time"
)

func parseCertPEM(s string) (*x509.Certificate, error) {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return nil, errors.New("PEM_read_bio_X509_AUX() failed")
	}
	return x509.ParseCertificate(block.Bytes)
}

func parseKeyPEM(s string) (crypto.PrivateKey, error) {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return nil, errors.New("PEM_read_bio_PrivateKey() failed")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	return nil, errors.New("PEM_read_bio_PrivateKey() failed")
}

func validPublicKeyPEM(s string) bool {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return false
	}
	if _, err := x509.ParsePKIXPublicKey(block.Bytes); err == nil {
		return true
	}
	if _, err := x509.ParsePKCS1PublicKey(block.Bytes); err == nil {
		return true
	}
	return false
}

func checkCertPEM(v any) any {
	if _, err := parseCertPEM(v.(string)); err != nil {
		return "invalid certificate: " + err.Error()
	}
	return ""
}

func checkKeyPEM(v any) any {
	if _, err := parseKeyPEM(v.(string)); err != nil {
		return "invalid key: " + err.Error()
	}
	return ""
}

func checkCACertPEM(v any) any {
	c, err := parseCertPEM(v.(string))
	if err != nil {
		return "invalid certificate: " + err.Error()
	}
	if !c.BasicConstraintsValid || !c.IsCA {
		return `certificate does not appear to be a CA because it is missing the "CA" basic constraint`
	}
	if time.Now().After(c.NotAfter) {
		return `certificate expired, "Not After" time is in the past`
	}
	return ""
}

func keyMatches(c *x509.Certificate, k crypto.PrivateKey) bool {
	type pub interface{ Public() crypto.PublicKey }
	p, ok := k.(pub)
	if !ok {
		return false
	}
	type eq interface{ Equal(crypto.PublicKey) bool }
	e, ok := c.PublicKey.(eq)
	return ok && e.Equal(p.Public())
}

func keyType(c *x509.Certificate) string {
	switch c.PublicKey.(type) {
	case *rsa.PublicKey:
		return "rsa"
	case *ecdsa.PublicKey:
		return "ec"
	case ed25519.PublicKey:
		return "ed25519"
	}
	return "other"
}

func checkCertificate(e map[string]any) ([]string, map[string]any) {
	var ent []string
	pair := func(certField, keyField string) *x509.Certificate {
		cs, _ := e[certField].(string)
		ks, _ := e[keyField].(string)
		c, err1 := parseCertPEM(cs)
		k, err2 := parseKeyPEM(ks)
		if err1 != nil || err2 != nil {
			return nil
		}
		if !keyMatches(c, k) {
			if certField == "cert" {
				ent = append(ent, "certificate does not match key")
			} else {
				ent = append(ent, "alternative certificate does not match key")
			}
		}
		return c
	}
	c := pair("cert", "key")
	if (e["cert_alt"] == nil) != (e["key_alt"] == nil) {
		ent = append(ent, "all or none of these fields must be set: 'cert_alt', 'key_alt'")
	} else if e["cert_alt"] != nil {
		ca := pair("cert_alt", "key_alt")
		if c != nil && ca != nil && keyType(c) == keyType(ca) {
			ent = append(ent, "certificate and alternative certificate need to have different type (e.g. RSA and ECDSA), the provided certificates were both of the same type")
		}
	}
	return ent, nil
}

// certDigest is the sha256 hex digest of the DER certificate (ca_certificates.cert_digest).
func certDigest(s string) string {
	c, err := parseCertPEM(s)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(c.Raw)
	return hex.EncodeToString(sum[:])
}
