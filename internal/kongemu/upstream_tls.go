package kongemu

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/konductor/konductor/internal/kongrouter"
)

// The proxy's connections to backends, as Kong (nginx) makes them: TLS for an https (grpcs,
// wss) service, with the SNI and verification of kong/runloop/upstream_ssl.lua and the
// nginx template (proxy_ssl_name $upstream_host, proxy_ssl_server_name on).

// connectionTransport is a transport whose every connection is dialBackend's: one request,
// no connection kept.
func (p *Proxy) connectionTransport(st *proxyState, d *kongrouter.Decision, target *kongrouter.Target, tlsUpstream bool) *http.Transport {
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		return p.dialBackend(ctx, st, d, target, tlsUpstream)
	}
	// HTTP/2 when the TLS handshake negotiated it (grpcs), HTTP/1.1 otherwise.
	t := &http.Transport{Proxy: nil, DisableKeepAlives: true, DialContext: dial, ForceAttemptHTTP2: true}
	if tlsUpstream {
		t.DialTLSContext = dial
	}
	return t
}

// dialBackend opens a connection to target: to the in-process backend Resolve names (served
// over an in-memory pipe, over TLS when BackendTLS says it speaks it) or over the network;
// with TLS when the service's protocol asks it.
func (p *Proxy) dialBackend(ctx context.Context, st *proxyState, d *kongrouter.Decision, target *kongrouter.Target, tlsUpstream bool) (net.Conn, error) {
	var conn net.Conn
	if p.opts.Resolve != nil {
		h := p.opts.Resolve(target.Host, target.Port)
		if h == nil {
			return nil, errors.New("nothing answers at " + target.Host)
		}
		var serverTLS *tls.Config
		if p.opts.BackendTLS != nil {
			serverTLS = p.opts.BackendTLS(target.Host, target.Port)
		}
		c, err := servePipe(h, serverTLS)
		if err != nil {
			return nil, err
		}
		conn = c
	} else {
		var dialer net.Dialer
		c, err := dialer.DialContext(ctx, "tcp", net.JoinHostPort(target.Host, strconv.Itoa(target.Port)))
		if err != nil {
			return nil, err
		}
		conn = c
	}
	if !tlsUpstream {
		return conn, nil
	}
	tc := tls.Client(conn, upstreamTLSConfig(st, d))
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return tc, nil
}

// upstreamTLSConfig is the client side of Kong's TLS connection to the backend of d's
// service. The name (SNI, and the name verified) is $upstream_host without its port, and no
// SNI for an IP address (nginx's proxy_ssl_name). The certificate is verified only when the
// service's tls_verify is true (Kong's proxy_ssl_verify is off otherwise), against its
// ca_certificates (without them, the system's store: lua_ssl_trusted_certificate), with a
// chain of at most tls_verify_depth intermediate CAs (nginx's default depth 1).
func upstreamTLSConfig(st *proxyState, d *kongrouter.Decision) *tls.Config {
	name := d.Forward.HostHeader
	if h, _, err := net.SplitHostPort(name); err == nil {
		name = h
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true} //nolint:gosec // verified below when tls_verify says so
	// nginx speaks HTTP/1.1 to an https upstream (proxy_pass) and HTTP/2 to a grpcs one
	// (grpc_pass).
	cfg.NextProtos = []string{"http/1.1"}
	if d.Forward.Scheme == "grpcs" {
		cfg.NextProtos = []string{"h2"}
	}
	if net.ParseIP(name) == nil {
		cfg.ServerName = name
	}
	svc := d.Match.Service
	if svc == nil || svc.TLSVerify == nil || !*svc.TLSVerify {
		return cfg
	}
	var roots *x509.CertPool
	if len(svc.CACertificates) > 0 {
		roots = x509.NewCertPool()
		for _, id := range svc.CACertificates {
			if id != nil && st.cas[*id] != nil {
				roots.AddCert(st.cas[*id])
			}
		}
	}
	depth := 1
	if svc.TLSVerifyDepth != nil {
		depth = *svc.TLSVerifyDepth
	}
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("upstream SSL certificate verify error: no certificate")
		}
		intermediates := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			intermediates.AddCert(c)
		}
		chains, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{DNSName: name, Roots: roots, Intermediates: intermediates})
		if err != nil {
			return fmt.Errorf("upstream SSL certificate verify error: %w", err)
		}
		for _, chain := range chains {
			// OpenSSL's verify depth counts the CAs between the leaf and the trust anchor.
			if len(chain)-2 <= depth {
				return nil
			}
		}
		return fmt.Errorf("upstream SSL certificate verify error: certificate chain too long (tls_verify_depth %d)", depth)
	}
	return cfg
}

// caCertificatesByID are the configuration's ca_certificates by id.
func caCertificatesByID(cfg *kongrouter.Config) map[string]*x509.Certificate {
	out := map[string]*x509.Certificate{}
	for _, c := range cfg.CACertificates {
		if c.ID == nil || c.Cert == nil {
			continue
		}
		block, _ := pem.Decode([]byte(*c.Cert))
		if block == nil {
			continue
		}
		if cert, err := x509.ParseCertificate(block.Bytes); err == nil {
			out[*c.ID] = cert
		}
	}
	return out
}
