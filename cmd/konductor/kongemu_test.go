package main

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"
)

func TestKongemuFlags(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a valid command line serves until ctx ends: at once here
	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"--listen", "127.0.0.1:0", "--router-flavor", "expressions", "--edition", "enterprise", "--proxy-listen", "127.0.0.1:0", "--proxy-listen-tls", "127.0.0.1:0"}, true},
		{[]string{"--listen", "127.0.0.1:0", "--proxy-listen", "off"}, true},
		{[]string{"--listen", "127.0.0.1:0", "--proxy-backends", "mirror"}, false},
		{[]string{"--listen", "127.0.0.1:0", "--proxy-listen", "off", "--router-flavor", "atc"}, false},
		{[]string{"--listen", "127.0.0.1:0", "--proxy-listen", "off", "--edition", "free"}, false},
	} {
		if err := runKongemu(ctx, c.args); (err == nil) != c.ok {
			t.Errorf("%v: got error %v", c.args, err)
		}
	}
}

func TestKongemuKonnectFlags(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	lic := filepath.Join(dir, "license.json")
	if err := os.WriteFile(lic, []byte(`{"license":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	certs := filepath.Join(dir, "certs")
	if err := runKongemu(ctx, []string{"--konnect", "--listen", "127.0.0.1:0", "--konnect-control-plane-id", "cp1",
		"--konnect-cert-dir", certs, "--konnect-license", lic}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tls.crt", "tls.key", "ca.crt", "server.crt"} {
		if _, err := os.Stat(filepath.Join(certs, f)); err != nil {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	if _, err := tls.LoadX509KeyPair(filepath.Join(certs, "tls.crt"), filepath.Join(certs, "tls.key")); err != nil {
		t.Errorf("client key pair: %v", err)
	}
	for _, args := range [][]string{
		{"--konnect", "--listen", "127.0.0.1:0", "--mode", "postgres"},
		{"--konnect", "--listen", "127.0.0.1:0", "--tls"},
		{"--listen", "127.0.0.1:0", "--konnect-control-plane-id", "cp1"},
	} {
		if err := runKongemu(ctx, args); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
