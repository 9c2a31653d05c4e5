package config

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"
)

// EnvPrefix is the prefix of the environment variable that sets each flag: --kong-admin-url is
// also read from CONTROLLER_KONG_ADMIN_URL. A flag given on the command line wins.
const EnvPrefix = "CONTROLLER_"

// Config is everything the controller is told at start.
type Config struct {
	// Kong Admin API.
	KongAdminURLs []string
	// KongAdminURLUsers are the user:password@ of --kong-admin-url, by scheme://host, taken
	// out of KongAdminURLs: the Admin API client sends them as basic auth.
	KongAdminURLUsers      map[string]*url.Userinfo
	KongAdminToken         string
	KongAdminTokenFile     string
	KongAdminTLSSkipVerify bool
	KongAdminCACertFile    string
	KongAdminClientCert    string
	KongAdminClientKey     string
	KongAdminFilterTag     string
	KongAdminConcurrency   int

	// Gateway discovery (KIC's flags). With KongAdminSvc set, the gateways are the endpoints
	// of those Services' EndpointSlices, on the ports named in KongAdminSvcPortNames, and
	// KongAdminURLs is not used.
	KongAdminSvc                    []types.NamespacedName
	KongAdminSvcPortNames           []string
	DiscoveryReadinessCheckInterval time.Duration
	DiscoveryReadinessCheckTimeout  time.Duration

	// What is watched.
	IngressClass    string
	WatchNamespaces []string
	Kubeconfig      string

	// Ingress status.
	PublishService   string
	PublishAddresses []string

	// Leader election. LeaderElect is the user's choice when LeaderElectAuto is false (an
	// explicit --leader-elect or KIC's --force-leader-election); with LeaderElectAuto the
	// manager decides at start as KIC does (manager.DecideLeaderElection) and LeaderElect
	// only holds the flag's default.
	LeaderElect           bool
	LeaderElectAuto       bool
	ElectionID            string
	ElectionNamespace     string
	ElectionLeaseDuration time.Duration
	ElectionRenewDeadline time.Duration
	ElectionRetryPeriod   time.Duration

	// Sync.
	ProxySyncPeriod time.Duration
	// ProxyTimeout bounds every request to a gateway's Admin API (--proxy-timeout-seconds,
	// KIC's, default 30s as in KIC 2.x and 3.x).
	ProxyTimeout time.Duration
	// UseLastValidConfigForFallback (KIC's --use-last-valid-config-for-fallback): objects a
	// fallback configuration leaves out are filled back in from the last configuration a
	// gateway accepted, where they exist there.
	UseLastValidConfigForFallback bool

	// KongAdminInitRetries and KongAdminInitRetryDelay bound how long the controller waits at
	// start for a gateway to answer GET / (KIC's flags, defaults 60 and 1s), when it must
	// know whether the gateway has a database to decide leader election.
	KongAdminInitRetries    int
	KongAdminInitRetryDelay time.Duration

	// Endpoints.
	MetricsBindAddress     string
	HealthProbeBindAddress string

	LogLevel string

	// UpdateStatus (--update-status, KIC's) turns Ingress status writes off when false.
	UpdateStatus bool
	// APIServerQPS and APIServerBurst bound the controller's requests to the Kubernetes API.
	APIServerQPS   float32
	APIServerBurst int
	// APIServerCompression (--apiserver-compression) asks the API server for gzip-compressed
	// answers. Off by default: in a cluster the network carries the start's lists (about
	// 10 MB at 3,000 Ingresses) faster than the API server gzips them, and that gzip is CPU
	// the API server (and the controller's gunzip) spends on the path to the first push
	// (docs/performance.md, "Start: the lists uncompressed").
	APIServerCompression bool

	// ClusterDomain is appended to service-upstream targets (--cluster-domain, KIC's).
	ClusterDomain string
	// GatewayAPIControllerName is the GatewayClass controllerName served
	// (--gateway-api-controller-name, KIC's, default konghq.com/kic-gateway-controller).
	GatewayAPIControllerName string
	// EnableDrainSupport keeps terminating endpoints as targets of weight 0
	// (--enable-drain-support, KIC's).
	EnableDrainSupport bool
	// AllowLocalTargets lets upstream targets be loopback, unspecified or link-local
	// addresses (an ExternalName of localhost, an EndpointSlice of 169.254.169.254), which
	// are refused by default (docs/security.md).
	AllowLocalTargets bool
	// FeatureGates are KIC's gates (--feature-gates), defaults filled in.
	FeatureGates FeatureGates
	// KongAdminURLsIgnored: --kong-admin-url was given along with --kong-admin-svc, which
	// wins (as in KIC); the controller logs it.
	KongAdminURLsIgnored bool

	// AdmissionWebhook is the validating admission webhook server (KIC's --admission-webhook-*
	// flags); off unless AdmissionWebhook.ListenAddr is set.
	AdmissionWebhook AdmissionWebhook

	// Profiling serves net/http/pprof at /debug/pprof/ on the metrics server (KIC's --profiling,
	// which KIC serves on its diagnostics server): heap and CPU profiles of a running controller.
	Profiling bool

	// Ignored lists the KIC flags given that konductor accepts but that have no effect here,
	// so that a KIC Deployment's arguments carry over; the controller logs each at start.
	Ignored []string
}

// kicFlagsWithoutEffect are KIC flags konductor accepts and ignores: they tune things it does
// not have (telemetry, config dumps, UDP status). The value says whether the flag is boolean (may stand bare: --anonymous-reports); the others
// also take their value as the next argument (--log-format json). A flag whose absence would change what Kong receives (for example
// --kong-workspace) is deliberately not in this list: it fails as unknown.
var kicFlagsWithoutEffect = map[string]bool{
	"anonymous-reports":          true,
	"log-format":                 false,
	"dump-config":                true,
	"dump-sensitive-config":      true,
	"publish-service-udp":        false,
	"publish-status-address-udp": false,
	"enable-reverse-sync":        true,
	"skip-ca-certificates":       true,
	"sync-period":                false,
	// Deprecated in KIC, where it has no effect any more: discovered gateways are always
	// reached on their Pod IP.
	"gateway-discovery-dns-strategy": false,
}

// AdmissionWebhook is where and with which certificate the admission webhook listens. KIC's
// rules: the certificate comes from files (watched: a renewed certificate is served without a
// restart) or inline PEM values, never both; with neither, from KIC's default files.
type AdmissionWebhook struct {
	// ListenAddr is host:port; "" when off (KIC's value "off" is read as off).
	ListenAddr string
	CertFile   string
	KeyFile    string
	Cert       string // PEM
	Key        string // PEM
}

// Enabled reports whether the webhook server runs.
func (a AdmissionWebhook) Enabled() bool { return a.ListenAddr != "" }

// KIC's default certificate files of the admission webhook, used when no certificate is given.
const (
	DefaultAdmissionWebhookCertFile = "/admission-webhook/tls.crt"
	DefaultAdmissionWebhookKeyFile  = "/admission-webhook/tls.key"
)

// Defaults, KIC's where KIC has the flag.
const (
	DefaultKongAdminURL        = "http://localhost:8001"
	DefaultFilterTag           = "managed-by-ingress-controller"
	DefaultElectionID          = "5b374a9e.konghq.com"
	DefaultProxySyncSeconds    = 3.0
	DefaultProxyTimeoutSeconds = 30.0
	DefaultMetricsAddress      = ":10255"
	DefaultHealthProbeAddress  = ":10254"

	// KIC's gateway discovery defaults and bound.
	DefaultDiscoveryReadinessCheckInterval = 10 * time.Second
	DefaultDiscoveryReadinessCheckTimeout  = 5 * time.Second
	MinDiscoveryReadinessCheckInterval     = 3 * time.Second
)

// DefaultKongAdminSvcPortNames are KIC's --kong-admin-svc-port-names.
var DefaultKongAdminSvcPortNames = []string{"admin-tls", "kong-admin-tls"}

// Parse reads args (without the program name) and the environment through getenv (os.Getenv
// in the binary). It returns an error that names the offending flag; pflag.ErrHelp when
// --help was asked for.
func Parse(args []string, getenv func(string) string) (*Config, error) {
	return ParseWithOutput(args, getenv, os.Stderr)
}

// ParseEnviron is Parse over a whole environment (os.Environ() in the binary): a CONTROLLER_
// variable that names no flag is an error too.
func ParseEnviron(args []string, environ []string) (*Config, error) {
	vars := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	return parse(args, func(k string) string { return vars[k] }, environ, os.Stderr)
}

// ParseWithOutput is Parse, writing usage and flag errors to out.
func ParseWithOutput(args []string, getenv func(string) string, out io.Writer) (*Config, error) {
	return parse(args, getenv, nil, out)
}

func parse(args []string, getenv func(string) string, environ []string, out io.Writer) (*Config, error) {
	c := &Config{}
	fs := pflag.NewFlagSet("konductor", pflag.ContinueOnError)
	fs.SetOutput(out)
	fs.SortFlags = false
	var (
		adminURLs   string
		namespaces  string
		syncSecs    float64
		timeoutSecs float64
		publish     string
		force       string
		adminSvcs   []string
	)
	fs.StringVar(&adminURLs, "kong-admin-url", DefaultKongAdminURL, "Kong Admin API URLs, comma-separated; every gateway gets the same configuration")
	fs.StringVar(&c.KongAdminToken, "kong-admin-token", "", "Kong-Admin-Token header value sent to the Admin API")
	fs.StringVar(&c.KongAdminTokenFile, "kong-admin-token-file", "", "file holding the Admin API token (conflicts with --kong-admin-token)")
	fs.BoolVar(&c.KongAdminTLSSkipVerify, "kong-admin-tls-skip-verify", false, "do not verify the Admin API's TLS certificate")
	fs.StringVar(&c.KongAdminCACertFile, "kong-admin-ca-cert-file", "", "PEM CA bundle that signs the Admin API's certificate")
	fs.StringVar(&c.KongAdminClientCert, "kong-admin-tls-client-cert-file", "", "client certificate (PEM) for mTLS to the Admin API")
	fs.StringVar(&c.KongAdminClientKey, "kong-admin-tls-client-key-file", "", "client key (PEM) for mTLS to the Admin API")
	fs.StringSliceVar(&adminSvcs, "kong-admin-svc", nil, "namespace/name of the Kong Admin API Service whose endpoints are the gateways (gateway discovery); repeat or comma-separate for several; replaces --kong-admin-url")
	fs.StringSliceVar(&c.KongAdminSvcPortNames, "kong-admin-svc-port-names", DefaultKongAdminSvcPortNames, "names of the admin Service's ports whose endpoints are gateways, comma-separated")
	fs.DurationVar(&c.DiscoveryReadinessCheckInterval, "gateway-discovery-readiness-check-interval", DefaultDiscoveryReadinessCheckInterval, "how often discovered gateways are checked: pending ones with GET /, ready ones with GET /status (at least 3s)")
	fs.DurationVar(&c.DiscoveryReadinessCheckTimeout, "gateway-discovery-readiness-check-timeout", DefaultDiscoveryReadinessCheckTimeout, "timeout of each of those checks; shorter than the interval")
	fs.StringVar(&c.KongAdminFilterTag, "kong-admin-filter-tag", DefaultFilterTag, "tag that marks the entities this controller owns in database-backed Kong")
	fs.IntVar(&c.KongAdminConcurrency, "kong-admin-concurrency", 10, "maximum concurrent Admin API requests per gateway in database mode")
	fs.StringVar(&c.IngressClass, "ingress-class", "kong", "ingress class served by this controller")
	fs.StringVar(&namespaces, "watch-namespace", "", "namespaces to watch, comma-separated; empty watches all")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig file; empty uses in-cluster config or $KUBECONFIG")
	fs.StringVar(&c.PublishService, "publish-service", "", "namespace/name of the Kong proxy Service whose addresses go into Ingress status")
	fs.StringVar(&publish, "publish-status-address", "", "addresses (IPs or host names, comma-separated) for Ingress status; override --publish-service")
	fs.BoolVar(&c.LeaderElect, "leader-elect", true, "elect a leader among replicas; only the leader writes to Kong (required with a database). Unset: decided at start as KIC does, on with a database, off for DB-less gateways")
	fs.StringVar(&force, "force-leader-election", "", "KIC's override of the leader-election decision: enabled or disabled")
	fs.Lookup("force-leader-election").Hidden = true // hidden in KIC too
	fs.StringVar(&c.ElectionID, "election-id", DefaultElectionID, "name of the Lease used for leader election")
	fs.StringVar(&c.ElectionNamespace, "election-namespace", "", "namespace of the Lease; empty uses the Pod's namespace")
	fs.DurationVar(&c.ElectionLeaseDuration, "election-lease-duration", 15*time.Second, "how long a standby waits before taking a lease its holder stopped renewing")
	fs.DurationVar(&c.ElectionRenewDeadline, "election-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it gives up leadership")
	fs.DurationVar(&c.ElectionRetryPeriod, "election-retry-period", 2*time.Second, "how often candidates try to acquire or renew the lease")
	fs.IntVar(&c.KongAdminInitRetries, "kong-admin-init-retries", 60, "how many times to ask a gateway GET / at start before giving up, when leader election is decided from its database mode")
	fs.DurationVar(&c.KongAdminInitRetryDelay, "kong-admin-init-retry-delay", time.Second, "delay between those attempts")
	fs.Float64Var(&syncSecs, "proxy-sync-seconds", DefaultProxySyncSeconds, "period of the full resync to Kong, in seconds; changes are synced as they happen")
	fs.Float64Var(&timeoutSecs, "proxy-timeout-seconds", DefaultProxyTimeoutSeconds, "timeout of each request to a gateway's Admin API, in seconds")
	fs.BoolVar(&c.UseLastValidConfigForFallback, "use-last-valid-config-for-fallback", false, "fill the objects a fallback configuration leaves out back in from the last configuration a gateway accepted (FallbackConfiguration gate)")
	fs.StringVar(&c.MetricsBindAddress, "metrics-bind-address", DefaultMetricsAddress, "address of the Prometheus metrics endpoint; 0 disables it")
	fs.StringVar(&c.HealthProbeBindAddress, "health-probe-bind-address", DefaultHealthProbeAddress, "address of /healthz and /readyz; 0 disables it")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, error")
	fs.BoolVar(&c.UpdateStatus, "update-status", true, "write the published addresses into Ingress status (with --publish-service or --publish-status-address)")
	fs.StringVar(&c.GatewayAPIControllerName, "gateway-api-controller-name", "konghq.com/kic-gateway-controller", "the controllerName of the GatewayClasses whose Gateways and routes this controller serves (KIC's default)")
	fs.StringVar(&c.ClusterDomain, "cluster-domain", "", "cluster domain appended to the Service names of service-upstream targets (empty: none, as KIC)")
	fs.BoolVar(&c.AllowLocalTargets, "allow-local-targets", false, "let Services make Kong connect to loopback, unspecified and link-local addresses (refused by default: Kong's own Admin API, the cloud metadata service)")
	fs.BoolVar(&c.EnableDrainSupport, "enable-drain-support", false, "keep terminating endpoints as upstream targets of weight 0, so that existing connections drain")
	fs.StringVar(&c.AdmissionWebhook.ListenAddr, "admission-webhook-listen", "off", "address (host:port) of the validating admission webhook (HTTPS, path /); off disables it")
	fs.StringVar(&c.AdmissionWebhook.CertFile, "admission-webhook-cert-file", "", "PEM certificate file of the admission webhook, reloaded when it changes; with no certificate given, "+DefaultAdmissionWebhookCertFile)
	fs.StringVar(&c.AdmissionWebhook.KeyFile, "admission-webhook-key-file", "", "PEM private key file of the admission webhook; with no key given, "+DefaultAdmissionWebhookKeyFile)
	fs.StringVar(&c.AdmissionWebhook.Cert, "admission-webhook-cert", "", "PEM certificate of the admission webhook (instead of --admission-webhook-cert-file)")
	fs.StringVar(&c.AdmissionWebhook.Key, "admission-webhook-key", "", "PEM private key of the admission webhook (instead of --admission-webhook-key-file)")
	fs.BoolVar(&c.Profiling, "profiling", false, "serve net/http/pprof at /debug/pprof/ on the metrics endpoint")
	var gates string
	fs.StringVar(&gates, "feature-gates", "", "KIC's feature gates, Name=true|false comma-separated (see docs/migration-from-kic.md)")
	fs.Float32Var(&c.APIServerQPS, "apiserver-qps", 100, "requests per second to the Kubernetes API")
	fs.IntVar(&c.APIServerBurst, "apiserver-burst", 300, "request burst to the Kubernetes API")
	fs.BoolVar(&c.APIServerCompression, "apiserver-compression", false, "ask the Kubernetes API server for gzip-compressed answers (worth it only on a slow link to it: it costs the API server CPU on every large list)")
	for name, boolean := range kicFlagsWithoutEffect {
		f := fs.VarPF(&ignoredValue{}, name, "", "accepted for KIC compatibility; no effect")
		if boolean {
			f.NoOptDefVal = "true" // a bare --anonymous-reports must not eat the next argument
		}
		f.Hidden = true
	}

	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if err = applyEnv(fs, getenv, environ); err != nil {
		return nil, err
	}

	fs.Visit(func(f *pflag.Flag) {
		if _, ok := f.Value.(*ignoredValue); ok {
			c.Ignored = append(c.Ignored, f.Name)
		}
	})
	c.LeaderElectAuto = !fs.Changed("leader-elect")
	switch force {
	case "":
	case "enabled", "disabled":
		if !c.LeaderElectAuto && c.LeaderElect != (force == "enabled") {
			return nil, fmt.Errorf("--force-leader-election=%s contradicts --leader-elect=%t; give one", force, c.LeaderElect)
		}
		c.LeaderElect, c.LeaderElectAuto = force == "enabled", false
	default:
		return nil, fmt.Errorf("--force-leader-election: must be enabled or disabled, got %q", force)
	}
	if c.FeatureGates, err = ParseFeatureGates(gates); err != nil {
		return nil, err
	}
	c.KongAdminURLs = splitList(adminURLs)
	var svcErrs []error
	for _, s := range adminSvcs {
		ns, name, ok := strings.Cut(strings.TrimSpace(s), "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			svcErrs = append(svcErrs, fmt.Errorf("--kong-admin-svc: %q is not namespace/name", s))
			continue
		}
		c.KongAdminSvc = append(c.KongAdminSvc, types.NamespacedName{Namespace: ns, Name: name})
	}
	if err := errors.Join(svcErrs...); err != nil {
		return nil, err
	}
	if c.Discovery() && fs.Changed("kong-admin-url") {
		c.KongAdminURLsIgnored = true
	}
	c.WatchNamespaces = splitList(namespaces)
	c.PublishAddresses = splitList(publish)
	c.ProxySyncPeriod = time.Duration(syncSecs * float64(time.Second))
	if timeoutSecs <= 0 {
		return nil, fmt.Errorf("--proxy-timeout-seconds: must be positive, got %g", timeoutSecs)
	}
	c.ProxyTimeout = time.Duration(timeoutSecs * float64(time.Second))
	if err := c.validate(syncSecs); err != nil {
		return nil, err
	}
	return c, nil
}

// applyEnv sets every flag not given on the command line from CONTROLLER_<NAME>.
func applyEnv(fs *pflag.FlagSet, getenv func(string) string, environ []string) error {
	var errs []error
	// A CONTROLLER_ variable that names no flag is an error, as an unknown flag is: KIC's
	// charts pass most settings this way, and one that would change what Kong receives
	// (CONTROLLER_KONG_WORKSPACE) must not be dropped in silence.
	known := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { known[EnvVarName(f.Name)] = true })
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, EnvPrefix) && !known[name] {
			errs = append(errs, fmt.Errorf("%s names no konductor flag (--%s); remove it", name,
				strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(name, EnvPrefix)), "_", "-")))
		}
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed {
			return
		}
		name := EnvVarName(f.Name)
		v := getenv(name)
		if v == "" {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			errs = append(errs, fmt.Errorf("invalid value %q for %s (flag --%s): %w", v, name, f.Name, err))
		}
	})
	return errors.Join(errs...)
}

// EnvVarName is the environment variable that sets flag name.
func EnvVarName(flag string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func (c *Config) validate(syncSecs float64) error {
	var errs []error
	bad := func(flag, format string, a ...any) {
		errs = append(errs, fmt.Errorf("--%s: %s", flag, fmt.Sprintf(format, a...)))
	}
	if len(c.KongAdminURLs) == 0 && !c.Discovery() {
		bad("kong-admin-url", "at least one URL is required")
	}
	if c.Discovery() {
		if len(c.KongAdminSvcPortNames) == 0 {
			bad("kong-admin-svc-port-names", "at least one port name is required with --kong-admin-svc")
		}
		if c.DiscoveryReadinessCheckInterval < MinDiscoveryReadinessCheckInterval {
			bad("gateway-discovery-readiness-check-interval", "must be at least %s, got %s", MinDiscoveryReadinessCheckInterval, c.DiscoveryReadinessCheckInterval)
		}
		if c.DiscoveryReadinessCheckTimeout <= 0 || c.DiscoveryReadinessCheckTimeout >= c.DiscoveryReadinessCheckInterval {
			bad("gateway-discovery-readiness-check-timeout", "must be positive and shorter than --gateway-discovery-readiness-check-interval (%s), got %s",
				c.DiscoveryReadinessCheckInterval, c.DiscoveryReadinessCheckTimeout)
		}
	}
	for i, u := range c.KongAdminURLs {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			bad("kong-admin-url", "%q is not an http(s) URL", redactURL(u))
			continue
		}
		if p.User != nil {
			// user:password@ is sent as basic auth (as net/http does with it), but the
			// URL that names the gateway in logs, errors, Events and metric labels has
			// none (docs/security.md, item 3).
			if c.KongAdminURLUsers == nil {
				c.KongAdminURLUsers = map[string]*url.Userinfo{}
			}
			p.User, c.KongAdminURLUsers[p.Scheme+"://"+p.Host] = nil, p.User
			c.KongAdminURLs[i] = p.String()
		}
	}
	if c.KongAdminToken != "" && c.KongAdminTokenFile != "" {
		bad("kong-admin-token-file", "conflicts with --kong-admin-token; set one")
	}
	for flag, path := range map[string]string{
		"kong-admin-token-file":           c.KongAdminTokenFile,
		"kong-admin-ca-cert-file":         c.KongAdminCACertFile,
		"kong-admin-tls-client-cert-file": c.KongAdminClientCert,
		"kong-admin-tls-client-key-file":  c.KongAdminClientKey,
	} {
		if path == "" {
			continue
		}
		if _, err := os.Stat(path); err != nil {
			bad(flag, "cannot read %q: %v", path, err)
		}
	}
	if (c.KongAdminClientCert == "") != (c.KongAdminClientKey == "") {
		bad("kong-admin-tls-client-cert-file", "--kong-admin-tls-client-cert-file and --kong-admin-tls-client-key-file go together")
	}
	if c.KongAdminFilterTag == "" {
		bad("kong-admin-filter-tag", "must not be empty: it is how konductor tells its entities from hand-made ones")
	}
	if c.KongAdminConcurrency < 1 {
		bad("kong-admin-concurrency", "must be at least 1, got %d", c.KongAdminConcurrency)
	}
	if c.PublishService != "" {
		if ns, name, ok := strings.Cut(c.PublishService, "/"); !ok || ns == "" || name == "" {
			bad("publish-service", "%q is not namespace/name", c.PublishService)
		}
	}
	if c.IngressClass == "" {
		bad("ingress-class", "must not be empty")
	}
	if syncSecs <= 0 {
		bad("proxy-sync-seconds", "must be positive, got %v", syncSecs)
	}
	if c.LeaderElect { // also when auto: it may be decided on
		if c.ElectionID == "" {
			bad("election-id", "must not be empty with leader election")
		}
		if c.ElectionLeaseDuration <= c.ElectionRenewDeadline {
			bad("election-lease-duration", "must be longer than --election-renew-deadline")
		}
		if c.ElectionRenewDeadline <= c.ElectionRetryPeriod {
			bad("election-renew-deadline", "must be longer than --election-retry-period")
		}
	}
	for _, a := range []struct{ flag, addr string }{
		{"metrics-bind-address", c.MetricsBindAddress},
		{"health-probe-bind-address", c.HealthProbeBindAddress},
	} {
		if a.addr == "0" || a.addr == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			bad(a.flag, "%q is not host:port: %v", a.addr, err)
		}
	}
	c.validateAdmissionWebhook(bad)
	if c.KongAdminInitRetries < 0 {
		bad("kong-admin-init-retries", "must not be negative, got %d", c.KongAdminInitRetries)
	}
	if c.KongAdminInitRetryDelay < 0 {
		bad("kong-admin-init-retry-delay", "must not be negative, got %s", c.KongAdminInitRetryDelay)
	}
	if c.APIServerQPS <= 0 {
		bad("apiserver-qps", "must be positive, got %v", c.APIServerQPS)
	}
	if c.APIServerBurst < 1 {
		bad("apiserver-burst", "must be at least 1, got %d", c.APIServerBurst)
	}
	switch c.LogLevel {
	case "debug", "info", "error":
	default:
		bad("log-level", "must be debug, info or error, got %q", c.LogLevel)
	}
	return errors.Join(errs...)
}

// validateAdmissionWebhook applies KIC's rules to the --admission-webhook-* flags and fills in
// KIC's default certificate files when no certificate is given.
func (c *Config) validateAdmissionWebhook(bad func(flag, format string, a ...any)) {
	a := &c.AdmissionWebhook
	if a.ListenAddr == "off" {
		a.ListenAddr = ""
	}
	if !a.Enabled() {
		return
	}
	if _, _, err := net.SplitHostPort(a.ListenAddr); err != nil {
		bad("admission-webhook-listen", "%q is not host:port or off: %v", a.ListenAddr, err)
	}
	files, inline := a.CertFile != "" || a.KeyFile != "", a.Cert != "" || a.Key != ""
	switch {
	case files && inline:
		bad("admission-webhook-cert", "give the certificate and key either as files (--admission-webhook-cert-file, --admission-webhook-key-file) or inline (--admission-webhook-cert, --admission-webhook-key), not both")
	case inline:
		if a.Cert == "" || a.Key == "" {
			bad("admission-webhook-cert", "--admission-webhook-cert and --admission-webhook-key go together")
		}
	case files:
		if a.CertFile == "" || a.KeyFile == "" {
			bad("admission-webhook-cert-file", "--admission-webhook-cert-file and --admission-webhook-key-file go together")
		}
	default:
		a.CertFile, a.KeyFile = DefaultAdmissionWebhookCertFile, DefaultAdmissionWebhookKeyFile
	}
}

// Discovery reports whether the gateways are discovered (--kong-admin-svc) rather than listed.
func (c *Config) Discovery() bool { return len(c.KongAdminSvc) > 0 }

// AdminToken returns the Admin API token, read from --kong-admin-token-file when set.
func (c *Config) AdminToken() (string, error) {
	if c.KongAdminTokenFile == "" {
		return c.KongAdminToken, nil
	}
	b, err := os.ReadFile(c.KongAdminTokenFile)
	if err != nil {
		return "", fmt.Errorf("--kong-admin-token-file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// ignoredValue takes any value: the flag is accepted and has no effect.
type ignoredValue struct{ v string }

func (i *ignoredValue) String() string     { return i.v }
func (i *ignoredValue) Set(v string) error { i.v = v; return nil }
func (i *ignoredValue) Type() string       { return "string" }

// redactURL is u with the password of a user:password@ masked, for messages.
func redactURL(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Redacted()
	}
	if at := strings.LastIndex(u, "@"); at >= 0 {
		return "[redacted]@" + u[at+1:]
	}
	return u
}
