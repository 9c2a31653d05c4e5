package config

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParseDefaults(t *testing.T) {
	c, err := Parse(nil, env(nil))
	require.NoError(t, err)
	require.Equal(t, []string{DefaultKongAdminURL}, c.KongAdminURLs)
	require.Equal(t, "kong", c.IngressClass)
	require.Equal(t, []string{DefaultFilterTag}, c.KongAdminFilterTags)
	require.Equal(t, DefaultElectionID, c.ElectionID)
	require.True(t, c.LeaderElectAuto, "leader election is decided at start unless the user chose")
	require.Equal(t, 3*time.Second, c.ProxySyncPeriod)
	require.Equal(t, 60, c.KongAdminInitRetries)
	require.Equal(t, time.Second, c.KongAdminInitRetryDelay)
	require.Nil(t, c.WatchNamespaces)
}

func TestParseFlagsAndEnvironment(t *testing.T) {
	c, err := Parse(
		[]string{"--kong-admin-url", "http://a:8001, https://b:8444", "--watch-namespace=ns1,ns2", "--proxy-sync-seconds=0.5"},
		env(map[string]string{
			"CONTROLLER_INGRESS_CLASS":    "internal",
			"CONTROLLER_KONG_ADMIN_URL":   "http://ignored:8001", // the flag wins
			"CONTROLLER_LEADER_ELECT":     "false",
			"CONTROLLER_ELECTION_ID":      "my-lease",
			"CONTROLLER_KONG_ADMIN_TOKEN": "secret",
		}),
	)
	require.NoError(t, err)
	require.Equal(t, []string{"http://a:8001", "https://b:8444"}, c.KongAdminURLs)
	require.Equal(t, []string{"ns1", "ns2"}, c.WatchNamespaces)
	require.Equal(t, 500*time.Millisecond, c.ProxySyncPeriod)
	require.Equal(t, "internal", c.IngressClass)
	require.False(t, c.LeaderElect)
	require.False(t, c.LeaderElectAuto, "CONTROLLER_LEADER_ELECT is an explicit choice")
	require.Equal(t, "my-lease", c.ElectionID)
	tok, err := c.AdminToken()
	require.NoError(t, err)
	require.Equal(t, "secret", tok)
}

// --leader-elect and KIC's hidden --force-leader-election are explicit choices; without
// either the manager decides.
func TestParseLeaderElectionChoice(t *testing.T) {
	for _, tc := range []struct {
		args          []string
		env           map[string]string
		enabled, auto bool
		err           string
	}{
		{args: nil, enabled: true, auto: true},
		{args: []string{"--leader-elect"}, enabled: true},
		{args: []string{"--leader-elect=false"}, enabled: false},
		{args: []string{"--force-leader-election=enabled"}, enabled: true},
		{args: []string{"--force-leader-election=disabled"}, enabled: false},
		{env: map[string]string{"CONTROLLER_FORCE_LEADER_ELECTION": "disabled"}, enabled: false},
		{args: []string{"--force-leader-election=enabled", "--leader-elect=true"}, enabled: true},
		{args: []string{"--force-leader-election=enabled", "--leader-elect=false"}, err: "contradicts --leader-elect=false"},
		{args: []string{"--force-leader-election=maybe"}, err: `--force-leader-election: must be enabled or disabled, got "maybe"`},
		{args: []string{"--kong-admin-init-retries=-1"}, err: "--kong-admin-init-retries: must not be negative"},
	} {
		c, err := Parse(tc.args, env(tc.env))
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, "%v", tc.args)
			continue
		}
		require.NoError(t, err, "%v", tc.args)
		require.Equal(t, tc.enabled, c.LeaderElect, "%v %v", tc.args, tc.env)
		require.Equal(t, tc.auto, c.LeaderElectAuto, "%v %v", tc.args, tc.env)
	}
}

func TestParseTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(path, []byte("from-file\n"), 0o600))
	c, err := Parse([]string{"--kong-admin-token-file", path}, env(nil))
	require.NoError(t, err)
	tok, err := c.AdminToken()
	require.NoError(t, err)
	require.Equal(t, "from-file", tok)
}

// Every bad value fails at start and the message names the flag (or its variable).
func TestParseRejectsBadValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"url scheme", []string{"--kong-admin-url", "ftp://x"}, nil, "--kong-admin-url"},
		{"empty url list", []string{"--kong-admin-url", " , "}, nil, "--kong-admin-url"},
		{"sync seconds", []string{"--proxy-sync-seconds", "0"}, nil, "--proxy-sync-seconds"},
		{"sync seconds not a number", []string{"--proxy-sync-seconds", "soon"}, nil, "proxy-sync-seconds"},
		{"env not a bool", nil, map[string]string{"CONTROLLER_LEADER_ELECT": "maybe"}, "CONTROLLER_LEADER_ELECT (flag --leader-elect)"},
		{"token and file", []string{"--kong-admin-token", "a", "--kong-admin-token-file", "/nonexistent"}, nil, "--kong-admin-token-file"},
		{"missing ca file", []string{"--kong-admin-ca-cert-file", "/nonexistent/ca.pem"}, nil, "--kong-admin-ca-cert-file"},
		{"cert without key", []string{"--kong-admin-tls-client-cert-file", "/etc/hostname"}, nil, "--kong-admin-tls-client-cert: the client certificate"},
		{"concurrency", []string{"--kong-admin-concurrency", "0"}, nil, "--kong-admin-concurrency"},
		{"empty class", []string{"--ingress-class", ""}, nil, "--ingress-class"},
		{"lease shorter than renew", []string{"--election-lease-duration", "5s"}, nil, "--election-lease-duration"},
		{"metrics address", []string{"--metrics-bind-address", "10255"}, nil, "--metrics-bind-address"},
		{"publish service", []string{"--publish-service", "kong-proxy"}, nil, "--publish-service"},
		{"log level", []string{"--log-level", "loud"}, nil, "--log-level"},
		{"unknown flag", []string{"--kong-url", "x"}, nil, "kong-url"},
		{"stray argument", []string{"extra"}, nil, `"extra"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.args, env(tc.env))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestHelp(t *testing.T) {
	var usage strings.Builder
	_, err := ParseWithOutput([]string{"--help"}, env(nil), &usage)
	require.True(t, errors.Is(err, pflag.ErrHelp))
	// FlagUsages is the parser's own list: what --help prints after its first line.
	require.Equal(t, "Usage of konductor:\n"+FlagUsages(), usage.String())
}

func TestEnvVarName(t *testing.T) {
	require.Equal(t, "CONTROLLER_KONG_ADMIN_TLS_SKIP_VERIFY", EnvVarName("kong-admin-tls-skip-verify"))
	require.True(t, strings.HasPrefix(EnvVarName("x"), EnvPrefix))
}

// updateFlagsDoc rewrites docs/flags.md's table from the flag definitions:
// go test ./internal/config -run TestFlagsDocIsGenerated -update-flags-doc
var updateFlagsDoc = flag.Bool("update-flags-doc", false, "rewrite docs/flags.md's table from the flag definitions")

// docs/flags.md is the user's reference of the flags: its table is FlagsMarkdown, generated
// from the definitions the parser uses, so every flag `konductor run --help` lists is in it,
// with its default and meaning as defined (issue #42: the table moved out of the README).
func TestFlagsDocIsGenerated(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "flags.md")
	doc, err := os.ReadFile(path)
	require.NoError(t, err)
	const begin, end = "<!-- table generated by FlagsMarkdown: go test ./internal/config -run TestFlagsDocIsGenerated -update-flags-doc -->\n", "<!-- end of the generated table -->"
	before, rest, ok := strings.Cut(string(doc), begin)
	require.True(t, ok, "docs/flags.md lacks the line %q", begin)
	table, after, ok := strings.Cut(rest, end)
	require.True(t, ok, "docs/flags.md lacks the line %q", end)
	if *updateFlagsDoc {
		require.NoError(t, os.WriteFile(path, []byte(before+begin+FlagsMarkdown()+end+after), 0o600))
		return
	}
	require.Equal(t, FlagsMarkdown(), table, "docs/flags.md's table differs from the flag definitions; regenerate it with -update-flags-doc")

	var usage strings.Builder
	_, err = ParseWithOutput([]string{"--help"}, env(nil), &usage)
	require.ErrorIs(t, err, pflag.ErrHelp)
	for _, line := range strings.Split(usage.String(), "\n") {
		if fields := strings.Fields(line); len(fields) > 0 && strings.HasPrefix(fields[0], "--") {
			require.Contains(t, table, "| `"+fields[0]+"` |", "docs/flags.md lacks %s", fields[0])
		}
	}
}

// A KIC Deployment's arguments carry over: flags that have no effect here are accepted, noted
// with the reason (the controller logs them), and a bare boolean form does not swallow the
// next argument.
func TestKICFlagsWithoutEffectAreAccepted(t *testing.T) {
	c, err := Parse([]string{"--anonymous-reports", "--ingress-class", "internal", "--sync-period=10m"},
		env(map[string]string{"CONTROLLER_INIT_CACHE_SYNC_DURATION": "5s"}))
	require.NoError(t, err)
	require.Equal(t, "internal", c.IngressClass)
	require.ElementsMatch(t, []string{"--anonymous-reports", "--sync-period", "--init-cache-sync-duration"}, noteFlags(c))
	for _, n := range c.Notes {
		require.NotEmpty(t, n.Why, n.Flag)
	}
}

func noteFlags(c *Config) []string {
	var out []string
	for _, n := range c.Notes {
		out = append(out, n.Flag)
	}
	return out
}

func TestUpdateStatusAndAPIServerLimits(t *testing.T) {
	c, err := Parse([]string{"--update-status=false", "--apiserver-qps", "5", "--apiserver-burst", "10"}, env(nil))
	require.NoError(t, err)
	require.False(t, c.UpdateStatus)
	require.Equal(t, float32(5), c.APIServerQPS)
	require.Equal(t, 10, c.APIServerBurst)
	_, err = Parse([]string{"--apiserver-qps", "0"}, env(nil))
	require.ErrorContains(t, err, "--apiserver-qps")
}

// Compression of the API server's answers is off unless asked for, by flag or environment.
func TestAPIServerCompression(t *testing.T) {
	c, err := Parse(nil, env(nil))
	require.NoError(t, err)
	require.False(t, c.APIServerCompression)
	c, err = Parse([]string{"--apiserver-compression"}, env(nil))
	require.NoError(t, err)
	require.True(t, c.APIServerCompression)
	c, err = ParseEnviron(nil, []string{"CONTROLLER_APISERVER_COMPRESSION=true"})
	require.NoError(t, err)
	require.True(t, c.APIServerCompression)
}

// A CONTROLLER_ variable that names no flag is ignored with a note, as KIC ignores it (KIC
// says nothing; konductor logs it).
func TestUnknownControllerVariableIsNoted(t *testing.T) {
	c, err := ParseEnviron(nil, []string{"CONTROLLER_KONG_WORKSPACES=team-a", "CONTROLLER_INGRESS_CLASS=internal", "HOME=/root"})
	require.NoError(t, err)
	require.Equal(t, "internal", c.IngressClass)
	require.Equal(t, []string{"CONTROLLER_KONG_WORKSPACES"}, noteFlags(c))
	require.Contains(t, c.Notes[0].Why, "names no flag (--kong-workspaces)")
}

// A variable set to the empty string is applied, as in KIC: an empty list, an error for a bool.
func TestEmptyVariableIsAValue(t *testing.T) {
	c, err := ParseEnviron(nil, []string{"CONTROLLER_WATCH_NAMESPACE="})
	require.NoError(t, err)
	require.Empty(t, c.WatchNamespaces)
	_, err = ParseEnviron(nil, []string{"CONTROLLER_PROFILING="})
	require.ErrorContains(t, err, "CONTROLLER_PROFILING (flag --profiling)")
}

// List flags are pflag's StringSlice, as in KIC: comma-separated, repeatable (values append),
// an environment variable is one comma-separated value, and a flag on the command line wins.
func TestListFlagsAreRepeatable(t *testing.T) {
	c, err := Parse([]string{
		"--watch-namespace", "a,b", "--watch-namespace", "c",
		"--kong-admin-url", "http://k1:8001", "--kong-admin-url", "http://k2:8001",
		"--kong-admin-filter-tag", "team-a,managed",
		"--publish-status-address", "192.0.2.1", "--publish-status-address", "192.0.2.2",
		"--kong-admin-header", "X-A: 1", "--kong-admin-header", "X-B:two,X-A:3",
	}, env(map[string]string{"CONTROLLER_WATCH_NAMESPACE": "ignored", "CONTROLLER_PUBLISH_STATUS_ADDRESS_UDP": "192.0.2.9,192.0.2.10"}))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c"}, c.WatchNamespaces)
	require.Equal(t, []string{"http://k1:8001", "http://k2:8001"}, c.KongAdminURLs)
	require.Equal(t, []string{"team-a", "managed"}, c.KongAdminFilterTags, "two tags, not one tag with a comma")
	require.Equal(t, []string{"192.0.2.1", "192.0.2.2"}, c.PublishAddresses)
	require.Equal(t, []string{"192.0.2.9", "192.0.2.10"}, c.PublishAddressesUDP)
	require.Equal(t, []string{"1", "3"}, c.KongAdminHeaders.Values("X-A"))
	require.Equal(t, "two", c.KongAdminHeaders.Get("X-B"))

	_, err = Parse([]string{"--kong-admin-header", "no-colon"}, env(nil))
	require.ErrorContains(t, err, `--kong-admin-header: "no-colon" is not Name:value`)
}

// Konnect takes KIC's flags and defaults; switched on, it needs an https address, a control
// plane and a client certificate and key, and an upload period of at least 10s, each
// missing one named (KIC's validateKonnect).
func TestKonnectFlags(t *testing.T) {
	c, err := Parse(nil, env(nil))
	require.NoError(t, err)
	require.Equal(t, Konnect{LicenseStorageEnabled: true, InitialLicensePollingPeriod: time.Minute, LicensePollingPeriod: 12 * time.Hour,
		Address: "https://us.kic.api.konghq.com", UploadConfigPeriod: 30 * time.Second, RefreshNodePeriod: time.Minute, ConfigSyncConcurrency: 4}, c.Konnect)
	require.False(t, c.Konnect.Enabled())

	_, err = Parse([]string{"--konnect-sync-enabled"}, env(nil))
	for _, flag := range []string{"--konnect-control-plane-id", "--konnect-tls-client-cert", "--konnect-tls-client-key"} {
		require.ErrorContains(t, err, flag+": required with Konnect")
	}
	_, err = Parse([]string{"--konnect-licensing-enabled", "--konnect-control-plane-id", "cp", "--konnect-address", "http://plain",
		"--konnect-tls-client-cert", "C", "--konnect-tls-client-cert-file", "f", "--konnect-tls-client-key", "K"}, env(nil))
	require.ErrorContains(t, err, `--konnect-address: "http://plain" is not an https URL`)
	require.ErrorContains(t, err, "--konnect-tls-client-cert: give it inline or as --konnect-tls-client-cert-file, not both")
	_, err = Parse([]string{"--konnect-sync-enabled", "--konnect-runtime-group-id", "cp", "--konnect-tls-client-cert", "C",
		"--konnect-tls-client-key", "K", "--konnect-upload-config-period", "5s"}, env(nil))
	require.ErrorContains(t, err, "--konnect-upload-config-period: must be at least 10s, got 5s")

	c, err = ParseEnviron(nil, []string{"CONTROLLER_KONNECT_SYNC_ENABLED=true", "CONTROLLER_KONNECT_RUNTIME_GROUP_ID=cp",
		"CONTROLLER_KONNECT_TLS_CLIENT_CERT_FILE=/c", "CONTROLLER_KONNECT_TLS_CLIENT_KEY_FILE=/k", "CONTROLLER_KONNECT_DISABLE_CONSUMERS_SYNC=true"})
	require.NoError(t, err)
	require.True(t, c.Konnect.Enabled())
	require.Equal(t, "cp", c.Konnect.ControlPlaneID, "the deprecated --konnect-runtime-group-id names the control plane")
	require.True(t, c.Konnect.ConsumersSyncDisabled)
	require.Empty(t, noteFlags(c))
}

// Every KIC 3.5 flag (testdata/kic-flags.tsv, read from KIC's source) is accepted under its name
// and from its CONTROLLER_ variable, the two give the same configuration, and each one either
// changes the configuration or is noted with the reason it has no effect: none is dropped in
// silence.
func TestEveryKICFlag(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.pem")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o600))
	values := map[string]string{ // values that pass validation and differ from the defaults
		"kong-admin-url": "http://a:8001,http://b:8001", "kong-admin-header": "X-A:1,X-B:2",
		"kong-admin-token-file": file, "kong-admin-ca-cert-file": file,
		"kong-admin-tls-client-cert-file": file, "kong-admin-tls-client-key-file": file,
		"log-level": "debug", "log-format": "json", "metrics-access-filter": "rbac",
		"force-leader-election": "disabled", "feature-gates": "GatewayAlpha=true",
		"gateway-api-controller-name": "example.com/x", "apiserver-host": "https://k8s:6443",
		"metrics-bind-address": ":1", "health-probe-bind-address": ":2", "admission-webhook-listen": ":3",
		"election-lease-duration": "20s", "election-renew-deadline": "9s", "election-retry-period": "1s",
		"proxy-sync-seconds": "7", "proxy-timeout-seconds": "7",
		"konnect-address": "https://eu.kic.api.konghq.com", "konnect-upload-config-period": "17s",
	}
	konnect := []string{"konnect-control-plane-id", "konnect-tls-client-cert", "konnect-tls-client-key"}
	companions := map[string][]string{ // flags that go with others
		"kong-admin-tls-client-cert-file": {"kong-admin-tls-client-key-file"}, "kong-admin-tls-client-key-file": {"kong-admin-tls-client-cert-file"},
		"kong-admin-tls-client-cert": {"kong-admin-tls-client-key"}, "kong-admin-tls-client-key": {"kong-admin-tls-client-cert"},
		"admission-webhook-cert-file": {"admission-webhook-key-file"}, "admission-webhook-key-file": {"admission-webhook-cert-file"},
		"admission-webhook-cert": {"admission-webhook-key"}, "admission-webhook-key": {"admission-webhook-cert"},
		"konnect-sync-enabled": konnect, "konnect-licensing-enabled": konnect,
	}
	value := func(name, kind, def string) string {
		if v, ok := values[name]; ok {
			return v
		}
		switch {
		case strings.HasPrefix(kind, "Bool"):
			if def == "true" {
				return "false"
			}
			return "true"
		case strings.HasPrefix(kind, "Duration"):
			return "7s"
		case strings.HasPrefix(kind, "Int"), strings.HasPrefix(kind, "Uint"), strings.HasPrefix(kind, "Float"):
			return "3"
		case strings.Contains(kind, "NamespacedName"):
			return "ns/name"
		case strings.HasPrefix(kind, "StringSlice"):
			return "a,b"
		}
		return "x"
	}
	defaults, err := ParseEnviron(nil, nil)
	require.NoError(t, err)
	tsv, err := os.ReadFile(filepath.Join("testdata", "kic-flags.tsv"))
	require.NoError(t, err)
	seen := 0
	for _, line := range strings.Split(string(tsv), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		name, kind, def := cols[0], cols[1], cols[2]
		seen++
		t.Run(name, func(t *testing.T) {
			if name == "help" {
				_, err := ParseEnviron([]string{"--help"}, nil)
				require.ErrorIs(t, err, pflag.ErrHelp)
				return
			}
			v := value(name, kind, def)
			args, environ := []string{"--" + name + "=" + v}, []string{EnvVarName(name) + "=" + v}
			for _, other := range companions[name] {
				ov := value(other, "String", "")
				args = append(args, "--"+other+"="+ov)
				environ = append(environ, EnvVarName(other)+"="+ov)
			}
			fromFlag, err := ParseEnviron(args, nil)
			require.NoError(t, err, "%v", args)
			fromEnv, err := ParseEnviron(nil, environ)
			require.NoError(t, err, "%v", environ)
			require.Equal(t, fromFlag, fromEnv, "the flag and its variable mean the same")
			if _, noted := kicFlagsWithoutEffect[name]; noted || name == "update-status-queue-buffer-size" {
				require.Contains(t, noteFlags(fromFlag), "--"+name, "a flag without effect is noted")
				return
			}
			require.NotEqual(t, defaults, fromFlag, "--%s=%s changes nothing", name, v)
		})
	}
	require.GreaterOrEqual(t, seen, 105)
}

// Gateway discovery takes KIC's flags and defaults; --gateway-discovery-dns-strategy, which
// has no effect in KIC any more, is accepted and logged.
func TestGatewayDiscoveryFlags(t *testing.T) {
	c, err := Parse([]string{"--kong-admin-svc", "kong/admin", "--gateway-discovery-dns-strategy", "service"}, env(nil))
	require.NoError(t, err)
	require.True(t, c.Discovery())
	require.Equal(t, []types.NamespacedName{{Namespace: "kong", Name: "admin"}}, c.KongAdminSvc)
	require.Equal(t, []string{"admin-tls", "kong-admin-tls"}, c.KongAdminSvcPortNames)
	require.Equal(t, 10*time.Second, c.DiscoveryReadinessCheckInterval)
	require.Equal(t, 5*time.Second, c.DiscoveryReadinessCheckTimeout)
	require.Equal(t, []string{"--gateway-discovery-dns-strategy"}, noteFlags(c))
	require.False(t, c.KongAdminURLsIgnored)

	c, err = Parse([]string{"--kong-admin-url", "http://kong:8001", "--kong-admin-svc-port-names", "admin"},
		env(map[string]string{"CONTROLLER_KONG_ADMIN_SVC": "a/one,b/two"}))
	require.NoError(t, err)
	require.Equal(t, []types.NamespacedName{{Namespace: "a", Name: "one"}, {Namespace: "b", Name: "two"}}, c.KongAdminSvc)
	require.Equal(t, []string{"admin"}, c.KongAdminSvcPortNames)
	require.True(t, c.KongAdminURLsIgnored, "as in KIC, --kong-admin-svc wins over --kong-admin-url")

	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--kong-admin-svc", "admin"}, `--kong-admin-svc: "admin" is not namespace/name`},
		{[]string{"--kong-admin-svc", "a/b", "--gateway-discovery-readiness-check-interval", "1s"}, "--gateway-discovery-readiness-check-interval: must be at least 3s"},
		{[]string{"--kong-admin-svc", "a/b", "--gateway-discovery-readiness-check-timeout", "10s"}, "--gateway-discovery-readiness-check-timeout: must be positive and shorter"},
		{[]string{"--kong-admin-svc", "a/b", "--kong-admin-svc-port-names", ""}, "--kong-admin-svc-port-names"},
	} {
		_, err := Parse(tc.args, env(nil))
		require.ErrorContains(t, err, tc.err, tc.args)
	}
}

// KIC's gate names are accepted over KIC's defaults; an unknown gate and a setting konductor
// does not implement fail at start, naming the gate.
func TestParseFeatureGates(t *testing.T) {
	c, err := Parse(nil, env(nil))
	require.NoError(t, err)
	require.True(t, c.FeatureGates.Enabled(GateFillIDs))
	require.False(t, c.FeatureGates.Enabled(GateRewriteURIs))
	require.True(t, c.FeatureGates.Enabled(GateFallbackConfiguration), "on by default in konductor, unlike KIC")
	require.Equal(t, 30*time.Second, c.ProxyTimeout, "KIC's --proxy-timeout-seconds default")
	require.False(t, c.UseLastValidConfigForFallback)

	c, err = Parse([]string{"--feature-gates=FallbackConfiguration=false", "--use-last-valid-config-for-fallback", "--proxy-timeout-seconds=2.5"}, env(nil))
	require.NoError(t, err)
	require.False(t, c.FeatureGates.Enabled(GateFallbackConfiguration))
	require.True(t, c.UseLastValidConfigForFallback)
	require.Equal(t, 2500*time.Millisecond, c.ProxyTimeout)

	c, err = Parse([]string{"--feature-gates=RewriteURIs=true, GatewayAlpha=true", "--cluster-domain=cluster.local", "--enable-drain-support"}, env(nil))
	require.NoError(t, err)
	require.True(t, c.FeatureGates.Enabled(GateRewriteURIs))
	require.True(t, c.FeatureGates.Enabled(GateGatewayAlpha))
	require.Equal(t, "cluster.local", c.ClusterDomain)
	require.True(t, c.EnableDrainSupport)

	for args, want := range map[string]string{
		"--feature-gates=NoSuchGate=true":                         "--feature-gates: NoSuchGate is not a valid feature",
		"--proxy-timeout-seconds=0":                               "--proxy-timeout-seconds: must be positive",
		"--feature-gates=RewriteURIs=maybe":                       "RewriteURIs=maybe: not a bool",
		"--feature-gates=RewriteURIs":                             `"RewriteURIs" is not Name=true|false`,
		"--feature-gates=FillIDs=false":                           "FillIDs=false is not supported by konductor",
		"--feature-gates=StickySessionsTerminatingEndpoints=true": "StickySessionsTerminatingEndpoints=true is not supported",
	} {
		_, err := Parse([]string{args}, env(nil))
		require.ErrorContains(t, err, want, args)
	}
}

// The admission webhook takes KIC's flags and rules: off by default and with "off"; a
// certificate from files or inline, not both; with none, KIC's default files.
func TestAdmissionWebhookFlags(t *testing.T) {
	c, err := Parse(nil, env(nil))
	require.NoError(t, err)
	require.False(t, c.AdmissionWebhook.Enabled())

	c, err = Parse([]string{"--admission-webhook-listen", "off"}, env(nil))
	require.NoError(t, err)
	require.False(t, c.AdmissionWebhook.Enabled())

	c, err = Parse(nil, env(map[string]string{"CONTROLLER_ADMISSION_WEBHOOK_LISTEN": "0.0.0.0:8080"}))
	require.NoError(t, err)
	require.Equal(t, AdmissionWebhook{ListenAddr: "0.0.0.0:8080", CertFile: "/admission-webhook/tls.crt", KeyFile: "/admission-webhook/tls.key"}, c.AdmissionWebhook)

	c, err = Parse([]string{"--admission-webhook-listen", ":8080", "--admission-webhook-cert", "C", "--admission-webhook-key", "K"}, env(nil))
	require.NoError(t, err)
	require.Equal(t, AdmissionWebhook{ListenAddr: ":8080", Cert: "C", Key: "K"}, c.AdmissionWebhook)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--admission-webhook-listen", "8080"}, "--admission-webhook-listen"},
		{[]string{"--admission-webhook-listen", ":8080", "--admission-webhook-cert-file", "c", "--admission-webhook-cert", "C", "--admission-webhook-key", "K"}, "not both"},
		{[]string{"--admission-webhook-listen", ":8080", "--admission-webhook-cert-file", "c"}, "go together"},
		{[]string{"--admission-webhook-listen", ":8080", "--admission-webhook-key", "K"}, "go together"},
	} {
		_, err := Parse(tc.args, env(nil))
		require.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
}

// docs/migration-from-kic.md's flag table lists every KIC flag of the fixture.
func TestMigrationDocListsEveryKICFlag(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "migration-from-kic.md"))
	require.NoError(t, err)
	tsv, err := os.ReadFile(filepath.Join("testdata", "kic-flags.tsv"))
	require.NoError(t, err)
	for _, line := range strings.Split(string(tsv), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, "\t")
		require.Contains(t, string(doc), "| `--"+name+"` |", "docs/migration-from-kic.md's flag table lacks --%s", name)
	}
}
