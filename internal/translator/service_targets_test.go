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
		// Names known to resolve to a local address (issue #44, item 4).
		"localhost.example.com": "a loopback name", "localhost.localdomain": "a loopback name",
		"ip6-localhost": "a loopback name", "ip6-loopback": "a loopback name",
		"localtest.me": "a name that resolves to a loopback address", "admin.localtest.me": "a name that resolves to a loopback address",
		"x.lvh.me":         "a name that resolves to a loopback address",
		"127.0.0.1.nip.io": "a name that resolves to a loopback address", "admin.127.0.0.1.nip.io": "a name that resolves to a loopback address",
		"app-127-0-0-1.nip.io": "a name that resolves to a loopback address", "127-0-0-1.sslip.io": "a name that resolves to a loopback address",
		"7f000001.nip.io": "a name that resolves to a loopback address", "app-7f000001.nip.io": "a name that resolves to a loopback address",
		"--1.sslip.io": "a name that resolves to a loopback address", "fe80--1.sslip.io": "a name that resolves to a link-local address",
		"169.254.169.254.nip.io": "a name that resolves to a link-local address", "ip-169-254-169-254.example.com": "a name that resolves to a link-local address",
		"0.0.0.0.nip.io": "a name that resolves to the unspecified address",
		// Leading zeros: Go refuses the address, Kong (nginx) reads it as decimal.
		"127.000.000.001": "a loopback address", "169.254.169.0254": "a link-local address", "admin.127.0.0.01.nip.io": "a name that resolves to a loopback address",
		"0177.0.0.1": "", // 177.0.0.1 to nginx, not octal
		// Names that carry a non-local address, or look like one without being one.
		"10.0.0.1.nip.io": "", "app-10-0-0-1.nip.io": "", "7f000001.example.com": "", "deadbeef.nip.io": "",
		"v1-2-3-4.example.com": "", "a.b.c.d.example.com": "", "1.2.3.example.com": "",
		"10.0.0.1": "", "fd00::1": "", "example.com": "", "mylocalhost.example.com": "", "192.168.1.1": "",
	} {
		require.Equal(t, want, localTarget(host), host)
	}
}

// With --allow-local-targets the local-targets case's targets are all sent, and nothing is
// reported but the foreign Service name, which needs a ReferenceGrant.
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
	require.Equal(t, 2, m, "10.0.0.5 and fd00::5")
	require.Equal(t, 2+7, n, "and the 7 local ones")
	require.Len(t, problems, 1)
	require.Contains(t, problems[0].Message, "no ReferenceGrant in namespace finance")
}

// --externalname-services: the externalname-services case's ExternalName targets under each
// policy. allow (the golden) keeps a Service of its own namespace, a granted one and a domain
// name; same-namespace only the first; deny none. The Admin API and local names are refused
// under every one, with their own reasons.
func TestExternalNamePolicies(t *testing.T) {
	dir := filepath.Join("testdata", "externalname-services")
	objs, err := manifest.Load(filepath.Join(dir, "in.yaml"))
	require.NoError(t, err)
	for policy, want := range map[string][]string{
		"":                        {"api.example.org:80", "billing.finance.svc.cluster.local:80", "web.tenant.svc.cluster.local:80"},
		ExternalNameAllow:         {"api.example.org:80", "billing.finance.svc.cluster.local:80", "web.tenant.svc.cluster.local:80"},
		ExternalNameSameNamespace: {"web.tenant.svc.cluster.local:80"},
		ExternalNameDeny:          nil,
	} {
		t.Run(policy, func(t *testing.T) {
			opts := readGoldenOptions(t, dir)
			opts.Translator.ExternalNameServices = policy
			state, problems := translateWith(t, objs, opts)
			var targets []string
			for _, u := range state.Upstreams {
				for _, tg := range u.Targets {
					targets = append(targets, *tg.Target.Target)
				}
			}
			require.ElementsMatch(t, want, targets)
			said := map[string]string{}
			for _, p := range problems {
				said[p.Object.Name] = p.Message
			}
			switch policy {
			case ExternalNameSameNamespace:
				require.Contains(t, said["granted"], "may only name Services of their own namespace (--externalname-services=same-namespace)")
				require.Contains(t, said["external"], "is not a Service of namespace tenant")
				require.Contains(t, said["admin-fqdn"], "is the Kong Admin API")
				require.Contains(t, said["nip"], "resolves to a loopback address")
			case ExternalNameDeny:
				require.Len(t, said, 14, "every ExternalName Service")
				require.Contains(t, said["own"], "--externalname-services=deny")
			default:
				require.Len(t, said, 11)
			}
		})
	}
}
