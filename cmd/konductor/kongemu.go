package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/konductor/konductor/internal/kongemu"
)

// runKongemu serves the Kong Admin API emulator until ctx is cancelled:
//
//	konductor kongemu --listen 127.0.0.1:8001 --mode dbless|postgres
//	    [--tls] [--tls-cert FILE --tls-key FILE] [--admin-token TOKEN] [--seed N]
//	    [--kong-version 3.10.0] [--router-flavor traditional_compatible|expressions]
//	    [--edition community|enterprise]
//
// It prints one line with the URL once it listens.
func runKongemu(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("kongemu", flag.ContinueOnError)
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
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("kongemu: unexpected arguments: %v", fs.Args())
	}
	opts := kongemu.Options{AdminToken: *token, Version: *version, Seed: *seed,
		RouterFlavor: *flavor, Edition: kongemu.Edition(*edition)}
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
	srv, err := kongemu.New(opts).StartWith(so)
	if err != nil {
		return fmt.Errorf("kongemu: %w", err)
	}
	fmt.Fprintf(os.Stdout, "kongemu: Kong Admin API emulator (mode %s) listening on %s\n", *mode, srv.URL)
	<-ctx.Done()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return srv.Close()
	}
	return nil
}
