package konnect

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/kong/go-kong/kong"

	"github.com/konductor/konductor/internal/config"
)

// Options are how konductor reaches a Konnect control plane.
type Options struct {
	// Address is Konnect's base address (--konnect-address), ControlPlaneID the control plane.
	Address, ControlPlaneID string
	// Certificate is the client certificate Konnect authenticates the controller by.
	Certificate tls.Certificate
	// RootCAs verify Konnect's certificate; nil: the system's (tests give the emulator's).
	RootCAs *x509.CertPool
	// UserAgent names the controller in every request (KIC: kong-ingress-controller/<version>).
	UserAgent string
	// Timeout bounds each request (default 30s).
	Timeout time.Duration
}

// OptionsFrom reads the --konnect-* flags: the certificate and key inline or from files.
func OptionsFrom(k config.Konnect, userAgent string) (Options, error) {
	pem := func(inline, file, what string) ([]byte, error) {
		if inline != "" {
			return []byte(inline), nil
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading the Konnect TLS client %s: %w", what, err)
		}
		return b, nil
	}
	certPEM, err := pem(k.TLSClientCert, k.TLSClientCertFile, "certificate")
	if err != nil {
		return Options{}, err
	}
	keyPEM, err := pem(k.TLSClientKey, k.TLSClientKeyFile, "key")
	if err != nil {
		return Options{}, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return Options{}, fmt.Errorf("the Konnect TLS client certificate and key: %w", err)
	}
	return Options{Address: strings.TrimSuffix(k.Address, "/"), ControlPlaneID: k.ControlPlaneID, Certificate: cert, UserAgent: userAgent}, nil
}

// BaseURL is the control plane's API (KIC's NewKongClientForKonnectControlPlane): an Admin
// API for the core entities, and its /v1/ paths for nodes and licenses.
func (o Options) BaseURL() string {
	return o.Address + "/kic/api/control-planes/" + o.ControlPlaneID
}

// HTTPClient authenticates with the client certificate (TLS 1.2 at least, as KIC).
func (o Options) HTTPClient() *http.Client {
	timeout := o.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{o.Certificate}, RootCAs: o.RootCAs}
	return &http.Client{Timeout: timeout, Transport: &userAgent{agent: o.UserAgent, next: tr}}
}

// KongClient is go-kong's client of the control plane's core entities.
func (o Options) KongClient() (*kong.Client, error) {
	if len(o.Certificate.Certificate) == 0 {
		return nil, errors.New("Konnect: client certificate is missing")
	}
	base := o.BaseURL()
	c, err := kong.NewClient(&base, o.HTTPClient())
	if err != nil {
		return nil, fmt.Errorf("Konnect client for %s: %w", base, err)
	}
	c.UserAgent = o.UserAgent
	return c, nil
}

type userAgent struct {
	agent string
	next  http.RoundTripper
}

func (u *userAgent) RoundTrip(r *http.Request) (*http.Response, error) {
	if u.agent != "" {
		r = r.Clone(r.Context())
		r.Header.Set("User-Agent", u.agent)
	}
	return u.next.RoundTrip(r)
}
