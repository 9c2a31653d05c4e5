package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongrules"
)

// runKongemu serves the Kong Admin API emulator until ctx is cancelled:
//
//	konductor kongemu --listen 127.0.0.1:8001 --mode dbless|postgres
//	    [--tls] [--tls-cert FILE --tls-key FILE] [--admin-token TOKEN] [--seed N]
//	    [--kong-version 3.10.0] [--router-flavor traditional_compatible|expressions]
//	    [--edition community|enterprise]
//	    [--proxy-listen 127.0.0.1:8000|off] [--proxy-listen-tls 127.0.0.1:8443]
//	    [--proxy-backends network|echo] [--allow-debug-header]
//	konductor kongemu --konnect --listen 127.0.0.1:8443 [--konnect-control-plane-id ID]
//	    [--konnect-cert-dir DIR] [--konnect-license FILE] [--kong-version 3.10.0] [--seed N]
//
// It prints one line with the URL once it listens, and one with the proxy's listeners: the
// proxy routes requests with Kong's router over the configuration the emulator holds and
// forwards them to the targets' addresses (--proxy-backends echo: every target is answered in
// process by an echo server that names the target, for a cluster whose pods do not run here). With --konnect it serves the Konnect
// control-plane emulator (kongemu.NewKonnect) over mutual TLS instead, writes the client
// certificate, its key, their CA and the server's certificate into the certificate folder,
// and prints them with the control plane id and the flags of konductor run that use them.
func runKongemu(ctx context.Context, args []string) error {
	return kongemuCommand(ctx, args, os.Stdout)
}

// kongemuCommand is runKongemu printing its lines, and its help, to stdout.
func kongemuCommand(ctx context.Context, args []string, stdout io.Writer) error {
	fs := commandFlagSet("kongemu")
	fs.SetOutput(helpOutput(args, stdout, os.Stderr))
	listen := fs.String("listen", "127.0.0.1:8001", "address to serve the Admin API on")
	mode := fs.String("mode", "dbless", "storage mode: dbless or postgres")
	useTLS := fs.Bool("tls", false, "serve HTTPS with a self-signed certificate (implied by --tls-cert)")
	certFile := fs.String("tls-cert", "", "PEM certificate for HTTPS (with --tls-key)")
	keyFile := fs.String("tls-key", "", "PEM private key for HTTPS (with --tls-cert)")
	token := fs.String("admin-token", "", "require this value in the Kong-Admin-Token header")
	version := fs.String("kong-version", "3.10.0", "Kong version reported by GET /")
	seed := fs.Uint64("seed", 1, "seed for fractional faults")
	flavor := fs.String("router-flavor", kongemu.RouterTraditionalCompatible,
		"router flavor reported by GET /: traditional_compatible or expressions (routes take an expression and a priority)")
	edition := fs.String("edition", string(kongemu.Community),
		"Kong edition: community or enterprise (consumer groups, mtls-auth)")
	konnect := fs.Bool("konnect", false, "serve the Konnect control-plane emulator (mutual TLS) instead of a Kong Admin API")
	cpID := fs.String("konnect-control-plane-id", "", "with --konnect: the control plane's id (default a random UUID)")
	certDir := fs.String("konnect-cert-dir", "", "with --konnect: folder for the client certificate, key and CA, and the server certificate (default a new temporary folder)")
	licenseFile := fs.String("konnect-license", "", "with --konnect: a Kong license JSON file the control plane serves on GET /v1/licenses")
	proxyListen := fs.String("proxy-listen", "127.0.0.1:8000", `address of the proxy's plain HTTP listener (HTTP/1.1 and HTTP/2 without TLS); "off": no proxy`)
	proxyListenTLS := fs.String("proxy-listen-tls", "127.0.0.1:8443", "address of the proxy's HTTPS listener")
	proxyBackends := fs.String("proxy-backends", "network", "where the proxy sends requests: network (the targets' addresses) or echo (an in-process echo server per target)")
	maxBody := fs.String("admin-max-body-size", kongrules.DefaultAdminMaxBodySize, "Kong's nginx_admin_client_max_body_size: a larger request body is answered 413 (nginx's size syntax: 10m, 512k; 0: no limit)")
	debugHeader := fs.Bool("allow-debug-header", false, "Kong's allow_debug_header: a request with Kong-Debug gets the route and service in response headers")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("kongemu: unexpected arguments: %v", fs.Args())
	}
	if *proxyBackends != "network" && *proxyBackends != "echo" {
		return fmt.Errorf("kongemu: --proxy-backends must be network or echo, not %q", *proxyBackends)
	}
	if *konnect {
		var bad []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "mode", "tls", "tls-cert", "tls-key", "admin-token", "router-flavor", "edition":
				bad = append(bad, "--"+f.Name)
			}
		})
		if len(bad) > 0 {
			return fmt.Errorf("kongemu: %s do not go with --konnect (it serves a database-mode Enterprise Admin API per control plane, over mutual TLS)", strings.Join(bad, ", "))
		}
		return runKonnectEmu(ctx, *listen, *cpID, *certDir, *licenseFile, *version, *seed)
	}
	for name, v := range map[string]string{"konnect-control-plane-id": *cpID, "konnect-cert-dir": *certDir, "konnect-license": *licenseFile} {
		if v != "" {
			return fmt.Errorf("kongemu: --%s goes with --konnect", name)
		}
	}
	opts := kongemu.Options{AdminToken: *token, Version: *version, Seed: *seed,
		RouterFlavor: *flavor, Edition: kongemu.Edition(*edition), AdminMaxBodySize: *maxBody}
	if _, err := kongrules.ParseNginxSize(*maxBody); err != nil {
		return fmt.Errorf("kongemu: --admin-max-body-size: %w", err)
	}
	if *flavor != kongemu.RouterTraditionalCompatible && *flavor != kongemu.RouterExpressions {
		return fmt.Errorf("kongemu: --router-flavor must be traditional_compatible or expressions, not %q", *flavor)
	}
	if opts.Edition != kongemu.Community && opts.Edition != kongemu.Enterprise {
		return fmt.Errorf("kongemu: --edition must be community or enterprise, not %q", *edition)
	}
	switch *mode {
	case "dbless", "off":
		opts.Mode = kongemu.DBLess
	case "postgres", "db":
		opts.Mode = kongemu.Postgres
	default:
		return fmt.Errorf("kongemu: --mode must be dbless or postgres, not %q", *mode)
	}
	so := kongemu.StartOptions{Addr: *listen, TLS: *useTLS}
	if (*certFile == "") != (*keyFile == "") {
		return errors.New("kongemu: --tls-cert and --tls-key go together")
	}
	if *certFile != "" {
		cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err != nil {
			return fmt.Errorf("kongemu: loading TLS key pair: %w", err)
		}
		so.TLS, so.Certificate = true, &cert
	}
	emu := kongemu.New(opts)
	srv, err := emu.StartWith(so)
	if err != nil {
		return fmt.Errorf("kongemu: %w", err)
	}
	fmt.Fprintf(stdout, "kongemu: Kong Admin API emulator (mode %s) listening on %s\n", *mode, srv.URL)
	if *proxyListen != "off" {
		po := kongemu.ProxyOptions{AllowDebugHeader: *debugHeader}
		if *proxyBackends == "echo" {
			po.Resolve = func(host string, port int) http.Handler {
				return &kongemu.EchoBackend{Pod: net.JoinHostPort(host, strconv.Itoa(port)), HTTPPort: strconv.Itoa(port)}
			}
		}
		ps, err := emu.Proxy(po).Start(kongemu.ProxyListen{Addr: *proxyListen, TLSAddr: *proxyListenTLS})
		if err != nil {
			_ = srv.Close()
			return fmt.Errorf("kongemu: proxy: %w", err)
		}
		defer ps.Close()
		fmt.Fprintf(stdout, "kongemu: proxy listening on %s and %s (backends: %s)\n", ps.URL, ps.TLSURL, *proxyBackends)
	}
	return serveUntilDone(ctx, srv)
}

// runKonnectEmu serves the Konnect control-plane emulator until ctx is cancelled.
func runKonnectEmu(ctx context.Context, listen, cpID, certDir, licenseFile, version string, seed uint64) error {
	opts := kongemu.KonnectOptions{Version: version, Seed: seed}
	if cpID != "" {
		opts.ControlPlaneIDs = []string{cpID}
	}
	var license []byte
	if licenseFile != "" {
		var err error
		if license, err = os.ReadFile(licenseFile); err != nil {
			return fmt.Errorf("kongemu: reading the license: %w", err)
		}
	}
	if certDir == "" {
		d, err := os.MkdirTemp("", "kongemu-konnect-")
		if err != nil {
			return fmt.Errorf("kongemu: %w", err)
		}
		certDir = d
	} else if err := os.MkdirAll(certDir, 0o700); err != nil {
		return fmt.Errorf("kongemu: %w", err)
	}
	k := kongemu.NewKonnect(opts)
	id := k.ControlPlaneIDs()[0]
	if license != nil {
		k.SetLicense(id, strings.TrimSpace(string(license)))
	}
	srv, err := k.StartOn(listen)
	if err != nil {
		return fmt.Errorf("kongemu: %w", err)
	}
	cc := k.ClientCert()
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{{"tls.crt", cc.CertPEM, 0o644}, {"tls.key", cc.KeyPEM, 0o600}, {"ca.crt", cc.CAPEM, 0o644}, {"server.crt", srv.CertPEM, 0o644}}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(certDir, f.name), f.data, f.mode); err != nil {
			_ = srv.Close()
			return fmt.Errorf("kongemu: %w", err)
		}
	}
	crt, key, server := filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key"), filepath.Join(certDir, "server.crt")
	fmt.Fprintf(os.Stdout, "kongemu: Konnect control plane emulator listening on %s\n", srv.URL)
	fmt.Fprintf(os.Stdout, "kongemu: control plane id %s (core entities under %s)\n", id, srv.ControlPlaneURL(id))
	fmt.Fprintf(os.Stdout, "kongemu: client certificate %s, key %s, their CA %s; server certificate %s\n",
		crt, key, filepath.Join(certDir, "ca.crt"), server)
	fmt.Fprintf(os.Stdout, "kongemu: SSL_CERT_FILE=%s konductor run --konnect-sync-enabled --konnect-address %s --konnect-control-plane-id %s --konnect-tls-client-cert-file %s --konnect-tls-client-key-file %s ...\n",
		server, srv.URL, id, crt, key)
	return serveUntilDone(ctx, srv)
}

// serveUntilDone waits for ctx to end, then shuts srv down (closing it when that fails).
func serveUntilDone(ctx context.Context, srv interface {
	Shutdown(context.Context) error
	Close() error
}) error {
	<-ctx.Done()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return srv.Close()
	}
	return nil
}
