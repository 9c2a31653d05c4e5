package translator

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/manifest"
)

func TestLocalTarget(t *testing.T) {
	for host, want := range map[string]string{
		"127.0.0.1": "a loopback address", "127.8.9.1": "a loopback address", "::1": "a loopback address",
		"[::1]": "a loopback address", "::ffff:127.0.0.1": "a loopback address",
		"0.0.0.0": "the unspecified address", "::": "the unspecified address",
		"169.254.169.254": "a link-local address", "fe80::1%eth0": "a link-local address", "FE80::1": "a link-local address",
		"localhost": "a loopback name", "LOCALHOST.": "a loopback name", "kong.localhost": "a loopback name",
		"metadata.google.internal": "the cloud metadata service's name",
		"10.0.0.1":                 "", "fd00::1": "", "example.com": "", "localhost.example.com": "", "192.168.1.1": "",
	} {
		require.Equal(t, want, localTarget(host), host)
	}
}

// With --allow-local-targets the local-targets case's targets are all sent, and nothing is
// reported but the foreign Service name.
func TestAllowLocalTargets(t *testing.T) {
	dir := filepath.Join("testdata", "local-targets")
	objs, err := manifest.Load(filepath.Join(dir, "in.yaml"))
	require.NoError(t, err)
	strict, _ := translateCaseObjects(t, dir, objs)
	opts := readGoldenOptions(t, dir)
	opts.Translator.AllowLocalTargets = true
	allowed, problems := translateWith(t, objs, opts)
	n := 0
	for _, u := range allowed.Upstreams {
		n += len(u.Targets)
	}
	m := 0
	for _, u := range strict.Upstreams {
		m += len(u.Targets)
	}
	require.Equal(t, 3, m, "10.0.0.5, fd00::5 and the foreign name")
	require.Equal(t, 3+7, n, "and the 7 local ones")
	require.Len(t, problems, 1)
	require.True(t, problems[0].Warning)
}
