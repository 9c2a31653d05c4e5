package config

import (
	"errors"
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
	require.Equal(t, DefaultFilterTag, c.KongAdminFilterTag)
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
		{"cert without key", []string{"--kong-admin-tls-client-cert-file", "/etc/hostname"}, nil, "--kong-admin-tls-client-cert-file"},
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
	_, err := Parse([]string{"--help"}, env(nil))
	require.True(t, errors.Is(err, pflag.ErrHelp))
}

func TestEnvVarName(t *testing.T) {
	require.Equal(t, "CONTROLLER_KONG_ADMIN_TLS_SKIP_VERIFY", EnvVarName("kong-admin-tls-skip-verify"))
	require.True(t, strings.HasPrefix(EnvVarName("x"), EnvPrefix))
}

// The README's flags table is the user's reference: every flag must be in it.
func TestReadmeListsEveryFlag(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	var usage strings.Builder
	_, err = ParseWithOutput([]string{"--help"}, env(nil), &usage)
	require.ErrorIs(t, err, pflag.ErrHelp)
	for _, line := range strings.Split(usage.String(), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasPrefix(fields[0], "--") {
			continue
		}
		require.True(t, strings.Contains(string(readme), "| `"+fields[0]+"` |"), "README flags table lacks %s", fields[0])
	}
}

// A KIC Deployment's arguments carry over: flags that have no effect here are accepted, listed
// (the controller logs them), and a bare boolean form does not swallow the next argument.
func TestKICFlagsWithoutEffectAreAccepted(t *testing.T) {
	c, err := Parse([]string{"--anonymous-reports", "--ingress-class", "internal", "--log-format=json", "--sync-period=10m"},
		env(map[string]string{"CONTROLLER_SKIP_CA_CERTIFICATES": "true"}))
	require.NoError(t, err)
	require.Equal(t, "internal", c.IngressClass)
	require.ElementsMatch(t, []string{"anonymous-reports", "log-format", "sync-period", "skip-ca-certificates"}, c.Ignored)

	_, err = Parse([]string{"--kong-workspace", "team-a"}, env(nil))
	require.ErrorContains(t, err, "kong-workspace", "a flag that would change what Kong receives is not silently ignored")
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

// A CONTROLLER_ variable that names no flag fails at start, like an unknown flag.
func TestUnknownControllerVariableFails(t *testing.T) {
	_, err := ParseEnviron(nil, []string{"CONTROLLER_KONG_WORKSPACE=team-a", "HOME=/root"})
	require.ErrorContains(t, err, "CONTROLLER_KONG_WORKSPACE names no konductor flag (--kong-workspace)")
	c, err := ParseEnviron(nil, []string{"CONTROLLER_INGRESS_CLASS=internal", "CONTROLLER_ANONYMOUS_REPORTS=false", "PATH=/bin"})
	require.NoError(t, err)
	require.Equal(t, "internal", c.IngressClass)
}

// Value-taking ignored flags also take their value as the next argument.
func TestIgnoredFlagsTakeSeparateValues(t *testing.T) {
	c, err := Parse([]string{"--log-format", "json", "--publish-service-udp", "kong/udp", "--dump-config", "--ingress-class", "x"}, env(nil))
	require.NoError(t, err)
	require.Equal(t, "x", c.IngressClass)
}

// KIC's --profiling (also CONTROLLER_PROFILING) has an effect here: pprof on the metrics server.
func TestProfilingFlag(t *testing.T) {
	c, err := Parse([]string{"--profiling", "--ingress-class", "x"}, env(nil))
	require.NoError(t, err)
	require.True(t, c.Profiling)
	require.Equal(t, "x", c.IngressClass, "a bare --profiling does not eat the next argument")
	c, err = Parse(nil, env(map[string]string{"CONTROLLER_PROFILING": "true"}))
	require.NoError(t, err)
	require.True(t, c.Profiling)
	require.Empty(t, c.Ignored)
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
	require.Equal(t, []string{"gateway-discovery-dns-strategy"}, c.Ignored)
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
