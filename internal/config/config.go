package config

import (
	"errors"
	"fmt"
	"io"
	"k8s.io/apimachinery/pkg/labels"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// EnvPrefix is the prefix of the environment variable that sets each flag: --kong-admin-url is
// also read from CONTROLLER_KONG_ADMIN_URL. A flag given on the command line wins.
const EnvPrefix = "CONTROLLER_"

// Config is everything the controller is told at start.
type Config struct {
	// Pod is the controller's own Pod, from the downward API's POD_NAME, POD_NAMESPACE and
	// POD_UID variables (empty outside a Pod): events name it, Konnect names its node after
	// it, the Konnect license is stored in its namespace.
	Pod Pod

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
	// KongAdminCACert, KongAdminClientCertPEM and KongAdminClientKeyPEM are the inline (PEM)
	// forms of the three files above (KIC's --kong-admin-ca-cert, --kong-admin-tls-client-cert,
	// --kong-admin-tls-client-key); a value and its file are not given together.
	KongAdminCACert        string
	KongAdminClientCertPEM string
	KongAdminClientKeyPEM  string
	// KongAdminTLSServerName is the name the Admin API's certificate is verified against
	// (--kong-admin-tls-server-name); empty: the URL's host.
	KongAdminTLSServerName string
	// KongAdminHeaders are sent with every Admin API request (--kong-admin-header, KIC's
	// "Name:value" form, repeatable).
	KongAdminHeaders http.Header
	// KongAdminFilterTags mark the entities konductor owns in database-backed Kong: an entity
	// is konductor's when it carries every one of them (decK's select_tags, as in KIC).
	KongAdminFilterTags  []string
	KongAdminConcurrency int
	// KongAdminDumpInterval is how often, in database mode, everything Kong holds is listed
	// (--kong-admin-dump-interval), in the background beside the syncs; a sync diffs against
	// what Kong confirmed to the last one. 0: every sync lists.
	KongAdminDumpInterval time.Duration
	// KongWorkspace is the Kong Enterprise workspace configured in database mode
	// (--kong-workspace); empty: the default workspace.
	KongWorkspace string
	// SkipCACertificates leaves CA certificates out of what Kong receives
	// (--skip-ca-certificates, for gateways whose workspaces share them).
	SkipCACertificates bool

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
	// APIServerHost overrides the Kubernetes API server's URL (--apiserver-host).
	APIServerHost string
	// DisabledControllers are KIC's --enable-controller-* switches turned off, by the name
	// after enable-controller- (ingress-networkingv1, kongplugin, ...): their kinds are not
	// read (ControllerKinds).
	DisabledControllers []string
	// SecretLabelSelector and ConfigMapLabelSelector are label keys: when set, only the
	// Secrets (ConfigMaps) carrying that label with the value "true" are read, as in KIC.
	SecretLabelSelector    string
	ConfigMapLabelSelector string
	// GatewayToReconcile, when set, is the only Gateway served (--gateway-to-reconcile).
	GatewayToReconcile *types.NamespacedName

	// Ingress status.
	PublishService   string
	PublishAddresses []string
	// PublishServiceUDP and PublishAddressesUDP are the addresses of UDPIngresses and of
	// Gateways' UDP listeners (--publish-service-udp, --publish-status-address-udp); unset,
	// the TCP ones serve.
	PublishServiceUDP   string
	PublishAddressesUDP []string
	// UpdateStatusQueueBufferSize is KIC's --update-status-queue-buffer-size: accepted and
	// validated; konductor's status writers read the cache after each round and keep no queue.
	UpdateStatusQueueBufferSize int

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

	// CacheSyncTimeout bounds how long the controller waits for its cache to sync at start
	// (--cache-sync-timeout); 0: controller-runtime's default.
	CacheSyncTimeout time.Duration
	// TermDelay is how long the controller goes on after SIGTERM before it stops
	// (--term-delay), so that load balancers stop sending to the Pod first.
	TermDelay time.Duration
	// EnableReverseSync sends the configuration on every resync even when it has not changed
	// (--enable-reverse-sync), which repairs a gateway changed behind konductor's back.
	EnableReverseSync bool
	// EmitKubernetesEvents (--emit-kubernetes-events) turns Kubernetes Events off when false.
	EmitKubernetesEvents bool

	// Endpoints.
	MetricsBindAddress     string
	HealthProbeBindAddress string
	// MetricsAccessFilter is KIC's --metrics-access-filter: "off", or "rbac" (a request to
	// /metrics must carry a token that the API server authenticates and authorizes).
	MetricsAccessFilter string
	// Diagnostics (KIC's): with DumpConfig the diagnostics server on DiagnosticServerPort
	// serves /debug/config/* (the last configuration sent and the last refused, secrets
	// redacted unless DumpSensitiveConfig); with Profiling it serves /debug/pprof/ too.
	DumpConfig           bool
	DumpSensitiveConfig  bool
	DiagnosticServerPort int

	// LogLevel is error, info, debug or trace; LogFormat text (console) or json.
	LogLevel  string
	LogFormat string

	// UpdateStatus (--update-status, KIC's) turns Ingress status writes off when false.
	UpdateStatus bool
	// APIServerQPS and APIServerBurst bound the controller's requests to the Kubernetes API.
	APIServerQPS   float32
	APIServerBurst int
	// APIServerCompression (--apiserver-compression) asks the API server for gzip-compressed
	// answers. Off by default: in a cluster the network carries the start's lists (about
	// 10 MB at 3,000 Ingresses) faster than the API server gzips them, and that gzip is CPU
	// the API server (and the controller's gunzip) spends on the path to the first push
	// (docs/performance/journal.md, "Start: the lists uncompressed").
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
	// ExternalNameServices is what an ExternalName Service may be (--externalname-services):
	// "allow" (KIC's: any name), "same-namespace" (only a Service DNS name of its own
	// namespace) or "deny" (none becomes a target). docs/security.md, item 2.
	ExternalNameServices string
	// PluginsDenied are plugin names no KongPlugin may use (--plugins-denied) in the
	// namespaces PluginsDeniedNamespaceSelector selects (--plugins-denied-namespace-selector,
	// a label selector; empty: every namespace). Off by default. docs/security.md, item 10.
	PluginsDenied                  []string
	PluginsDeniedNamespaceSelector string
	// HostOwnership (--host-ownership): a host is served only for the namespace of the oldest
	// object serving it. Off by default (KIC's shared hosts).
	HostOwnership bool
	// ConsumerScope (--consumer-scope): "namespace" admits a consumer only on the routes of
	// its own namespace; "" (the default) is KIC's: any consumer on any route.
	ConsumerScope string
	// FeatureGates are KIC's gates (--feature-gates), defaults filled in.
	FeatureGates FeatureGates
	// KongAdminURLsIgnored: --kong-admin-url was given along with --kong-admin-svc, which
	// wins (as in KIC); the controller logs it.
	KongAdminURLsIgnored bool

	// AdmissionWebhook is the validating admission webhook server (KIC's --admission-webhook-*
	// flags); off unless AdmissionWebhook.ListenAddr is set.
	AdmissionWebhook AdmissionWebhook
	// Konnect is KIC's Konnect integration (internal/konnect): the configuration the gateways
	// took mirrored into a Konnect control plane, nodes, licenses.
	Konnect Konnect

	// Profiling serves net/http/pprof at /debug/pprof/ on the diagnostics server (KIC's
	// --profiling, on --diagnostic-server-port as in KIC): heap and CPU profiles of a running
	// controller.
	Profiling bool

	// Notes are what the controller logs at start about the flags and variables given: a
	// KIC flag accepted without effect and why, a CONTROLLER_ variable that names no flag.
	Notes []Note
}

// Konnect is KIC's --konnect-* flags (docs/konnect.md).
type Konnect struct {
	// SyncEnabled (--konnect-sync-enabled) mirrors the configuration the gateways took into
	// the control plane ControlPlaneID at Address every UploadConfigPeriod, and reports the
	// controller and its gateways as nodes every RefreshNodePeriod.
	SyncEnabled bool
	// LicensingEnabled (--konnect-licensing-enabled) polls the control plane's license
	// (InitialLicensePollingPeriod until one is held, then LicensePollingPeriod) and gives it
	// to Enterprise gateways instead of KongLicense objects; LicenseStorageEnabled keeps it in
	// a Secret for a start during a Konnect outage.
	LicensingEnabled, LicenseStorageEnabled           bool
	InitialLicensePollingPeriod, LicensePollingPeriod time.Duration
	ControlPlaneID, Address                           string
	TLSClientCert, TLSClientCertFile                  string
	TLSClientKey, TLSClientKeyFile                    string
	UploadConfigPeriod, RefreshNodePeriod             time.Duration
	ConfigSyncConcurrency                             int
	ConsumersSyncDisabled                             bool
}

// Enabled reports whether any Konnect feature is on.
func (k Konnect) Enabled() bool { return k.SyncEnabled || k.LicensingEnabled }

// Konnect's defaults and bounds, KIC's.
const (
	DefaultKonnectAddress               = "https://us.kic.api.konghq.com"
	DefaultKonnectUploadConfigPeriod    = 30 * time.Second
	MinKonnectUploadConfigPeriod        = 10 * time.Second
	DefaultKonnectRefreshNodePeriod     = time.Minute
	DefaultKonnectConfigSyncConcurrency = 4
	DefaultKonnectInitialLicensePeriod  = time.Minute
	DefaultKonnectLicensePeriod         = 12 * time.Hour
)

// Note is one start-up remark on a flag or variable.
type Note struct {
	Flag string // --name, or the variable's name
	Why  string
}

// kicFlagsWithoutEffect are KIC flags konductor accepts though its design has no use for them,
// each with the reason the controller logs when it is given. A flag that would change what is
// watched or what Kong receives never belongs here.
var kicFlagsWithoutEffect = map[string]struct {
	boolean bool // may stand bare (--anonymous-reports); the others take a value
	why     string
}{
	"anonymous-reports":        {true, "konductor sends no usage reports"},
	"sync-period":              {false, "konductor's informers never resync: every change is an event, and the configuration is sent again every --proxy-sync-seconds"},
	"init-cache-sync-duration": {false, "nothing waits on a timer: the first configuration is sent as soon as every informer has synced, never before (docs/architecture.md, the barrier)"},
	// Deprecated in KIC, where it has no effect any more: discovered gateways are always
	// reached on their Pod IP.
	"gateway-discovery-dns-strategy": {false, "deprecated in KIC and without effect there: discovered gateways are reached on their Pod IP"},
	"kong-status-svc-port-names":     {false, "konductor checks discovered gateways on their Admin API (GET /status), which needs no status port"},
}

// ControllerKinds are KIC's --enable-controller-* switches, by the name after
// "enable-controller-", with the kinds of objects each one's controller reads in KIC.
var ControllerKinds = map[string][]string{
	"ingress-networkingv1":       {"Ingress"},
	"ingress-class-networkingv1": {"IngressClass"},
	"ingress-class-parameters":   {"IngressClassParameters"},
	"udpingress":                 {"UDPIngress"},
	"tcpingress":                 {"TCPIngress"},
	"kongingress":                {"KongIngress"},
	"kongclusterplugin":          {"KongClusterPlugin"},
	"kongplugin":                 {"KongPlugin"},
	"kongconsumer":               {"KongConsumer", "KongConsumerGroup"},
	"service":                    {"Service", "EndpointSlice"},
	"kong-upstream-policy":       {"KongUpstreamPolicy"},
	"gwapi-gateway":              {"Gateway", "GatewayClass"},
	"gwapi-httproute":            {"HTTPRoute"},
	"gwapi-reference-grant":      {"ReferenceGrant"},
	"gwapi-grpcroute":            {"GRPCRoute"},
	"kong-service-facade":        {"KongServiceFacade"},
	"kong-vault":                 {"KongVault"},
	"kong-license":               {"KongLicense"},
	"kong-custom-entity":         {"KongCustomEntity"},
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
	// ClientCAFile is the CA bundle the API server's client certificate must verify with
	// (--admission-webhook-client-ca-file); "": any caller is served.
	ClientCAFile string
}

// Enabled reports whether the webhook server runs.
func (a AdmissionWebhook) Enabled() bool { return a.ListenAddr != "" }

// The values of --externalname-services.
const (
	ExternalNameAllow         = "allow"
	ExternalNameSameNamespace = "same-namespace"
	ExternalNameDeny          = "deny"
)

// KIC's default certificate files of the admission webhook, used when no certificate is given.
const (
	DefaultAdmissionWebhookCertFile = "/admission-webhook/tls.crt"
	DefaultAdmissionWebhookKeyFile  = "/admission-webhook/tls.key"
)

// Defaults, KIC's where KIC has the flag.
const (
	DefaultKongAdminURL     = "http://localhost:8001"
	DefaultFilterTag        = "managed-by-ingress-controller"
	DefaultElectionID       = "5b374a9e.konghq.com"
	DefaultProxySyncSeconds = 3.0
	// DefaultKongAdminDumpInterval: a database-mode sync lists all of Kong at least every 5
	// minutes (and after a start, a failure or a refusal); at 10,000 Ingresses a listing is
	// seconds of the controller's and Kong's work (docs/scaling.md).
	DefaultKongAdminDumpInterval = 5 * time.Minute
	DefaultProxyTimeoutSeconds   = 30.0
	DefaultMetricsAddress        = ":10255"
	DefaultHealthProbeAddress    = ":10254"
	DefaultDiagnosticsPort       = 10256
	// DefaultConfigMapLabelSelector is KIC's --configmap-label-selector: a ConfigMap is read
	// only when it carries this label with the value "true".
	DefaultConfigMapLabelSelector = "konghq.com/configmap"

	// KIC's gateway discovery defaults and bound.
	DefaultDiscoveryReadinessCheckInterval = 10 * time.Second
	DefaultDiscoveryReadinessCheckTimeout  = 5 * time.Second
	MinDiscoveryReadinessCheckInterval     = 3 * time.Second
)

// DefaultKongAdminSvcPortNames are KIC's --kong-admin-svc-port-names.
var DefaultKongAdminSvcPortNames = []string{"admin-tls", "kong-admin-tls"}

// Parse reads args (without the program name) and the environment through getenv (os.Getenv
// in the binary; an empty value counts as unset). It returns an error that names the offending
// flag; pflag.ErrHelp when --help was asked for.
func Parse(args []string, getenv func(string) string) (*Config, error) {
	return ParseWithOutput(args, getenv, os.Stderr)
}

// ParseEnviron is Parse over a whole environment (os.Environ() in the binary), as KIC reads
// it: a variable set to the empty string is applied (an empty list, an error for a number),
// and a CONTROLLER_ variable that names no flag is ignored with a Note.
func ParseEnviron(args []string, environ []string) (*Config, error) {
	vars := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	return parse(args, lookup, environ, os.Stderr)
}

// ParseWithOutput is Parse, writing usage and flag errors to out.
func ParseWithOutput(args []string, getenv func(string) string, out io.Writer) (*Config, error) {
	lookup := func(k string) (string, bool) { v := getenv(k); return v, v != "" }
	return parse(args, lookup, nil, out)
}

// flagValues are the flags whose value is worked on after parsing.
type flagValues struct {
	syncSecs, timeoutSecs             float64
	force, gates                      string
	adminSvcs, headers                []string
	publishService, publishServiceUDP string
	gatewayToReconcile                string
	enabled                           map[string]*bool
	combinedServices                  bool
}

func parse(args []string, lookup func(string) (string, bool), environ []string, out io.Writer) (*Config, error) {
	c := &Config{}
	v := flagValues{enabled: map[string]*bool{}}
	fs := pflag.NewFlagSet("konductor", pflag.ContinueOnError)
	fs.SetOutput(out)
	fs.SortFlags = false
	c.defineFlags(fs, &v)

	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if err = c.applyEnv(fs, lookup, environ); err != nil {
		return nil, err
	}
	fs.Visit(func(f *pflag.Flag) {
		if no, ok := kicFlagsWithoutEffect[f.Name]; ok {
			c.Notes = append(c.Notes, Note{Flag: "--" + f.Name, Why: no.why})
		}
	})
	if fs.Changed("update-status-queue-buffer-size") {
		c.Notes = append(c.Notes, Note{Flag: "--update-status-queue-buffer-size",
			Why: "konductor keeps no status queue: its status writers read the cache after each round"})
	}
	c.LeaderElectAuto = !fs.Changed("leader-elect")
	switch v.force {
	case "":
	case "enabled", "disabled":
		if !c.LeaderElectAuto && c.LeaderElect != (v.force == "enabled") {
			return nil, fmt.Errorf("--force-leader-election=%s contradicts --leader-elect=%t; give one", v.force, c.LeaderElect)
		}
		c.LeaderElect, c.LeaderElectAuto = v.force == "enabled", false
	default:
		return nil, fmt.Errorf("--force-leader-election: must be enabled or disabled, got %q", v.force)
	}
	if c.FeatureGates, err = ParseFeatureGates(v.gates); err != nil {
		return nil, err
	}
	if v.combinedServices {
		// KIC 3.5's flag for what older releases gated.
		c.FeatureGates[GateCombinedServicesFromDifferentHTTPRoutes] = true
	}
	for _, name := range slices.Sorted(maps.Keys(v.enabled)) {
		if !*v.enabled[name] {
			c.DisabledControllers = append(c.DisabledControllers, name)
		}
	}
	c.KongAdminURLs = trimList(c.KongAdminURLs)
	c.WatchNamespaces = trimList(c.WatchNamespaces)
	c.PublishAddresses = trimList(c.PublishAddresses)
	c.PublishAddressesUDP = trimList(c.PublishAddressesUDP)
	c.KongAdminFilterTags = trimList(c.KongAdminFilterTags)
	var errs []error
	for _, s := range v.adminSvcs {
		nn, err := namespacedName("kong-admin-svc", s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.KongAdminSvc = append(c.KongAdminSvc, nn)
	}
	for _, f := range []struct {
		flag, value string
		into        *string
	}{{"publish-service", v.publishService, &c.PublishService}, {"publish-service-udp", v.publishServiceUDP, &c.PublishServiceUDP}} {
		if f.value == "" {
			continue
		}
		if _, err := namespacedName(f.flag, f.value); err != nil {
			errs = append(errs, err)
		}
		*f.into = f.value
	}
	if v.gatewayToReconcile != "" {
		nn, err := namespacedName("gateway-to-reconcile", v.gatewayToReconcile)
		if err != nil {
			errs = append(errs, err)
		}
		c.GatewayToReconcile = &nn
	}
	for _, h := range v.headers {
		name, value, ok := strings.Cut(h, ":")
		if name = strings.TrimSpace(name); !ok || name == "" {
			errs = append(errs, fmt.Errorf("--kong-admin-header: %q is not Name:value", h))
			continue
		}
		if c.KongAdminHeaders == nil {
			c.KongAdminHeaders = http.Header{}
		}
		c.KongAdminHeaders.Add(name, strings.TrimSpace(value))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if c.Discovery() && fs.Changed("kong-admin-url") {
		c.KongAdminURLsIgnored = true
	}
	c.ProxySyncPeriod = time.Duration(v.syncSecs * float64(time.Second))
	if v.timeoutSecs <= 0 {
		return nil, fmt.Errorf("--proxy-timeout-seconds: must be positive, got %g", v.timeoutSecs)
	}
	c.ProxyTimeout = time.Duration(v.timeoutSecs * float64(time.Second))
	if err := c.validate(v.syncSecs); err != nil {
		return nil, err
	}
	for name, to := range map[string]*string{"POD_NAME": &c.Pod.Name, "POD_NAMESPACE": &c.Pod.Namespace, "POD_UID": &c.Pod.UID} {
		*to, _ = lookup(name)
	}
	return c, nil
}

// Pod names the controller's Pod.
type Pod struct{ Name, Namespace, UID string }

// defineFlags defines every flag: konductor's, and every one of KIC 3.5's
// (testdata/kic-flags.tsv) under KIC's name, type and default.
func (c *Config) defineFlags(fs *pflag.FlagSet, v *flagValues) {
	// Kong Admin API.
	fs.StringSliceVar(&c.KongAdminURLs, "kong-admin-url", []string{DefaultKongAdminURL}, "Kong Admin API URLs, comma-separated or repeated; every gateway gets the same configuration")
	fs.StringVar(&c.KongAdminToken, "kong-admin-token", "", "Kong-Admin-Token header value sent to the Admin API")
	fs.StringVar(&c.KongAdminTokenFile, "kong-admin-token-file", "", "file holding the Admin API token (conflicts with --kong-admin-token)")
	fs.StringSliceVar(&v.headers, "kong-admin-header", nil, "header sent with every Admin API request, Name:value; comma-separated or repeated")
	fs.BoolVar(&c.KongAdminTLSSkipVerify, "kong-admin-tls-skip-verify", false, "do not verify the Admin API's TLS certificate")
	fs.StringVar(&c.KongAdminTLSServerName, "kong-admin-tls-server-name", "", "name the Admin API's TLS certificate is verified against (default: the URL's host)")
	fs.StringVar(&c.KongAdminCACertFile, "kong-admin-ca-cert-file", "", "PEM CA bundle that signs the Admin API's certificate")
	fs.StringVar(&c.KongAdminCACert, "kong-admin-ca-cert", "", "PEM CA bundle that signs the Admin API's certificate, inline (instead of --kong-admin-ca-cert-file)")
	fs.StringVar(&c.KongAdminClientCert, "kong-admin-tls-client-cert-file", "", "client certificate (PEM) for mTLS to the Admin API")
	fs.StringVar(&c.KongAdminClientKey, "kong-admin-tls-client-key-file", "", "client key (PEM) for mTLS to the Admin API")
	fs.StringVar(&c.KongAdminClientCertPEM, "kong-admin-tls-client-cert", "", "client certificate (PEM) for mTLS to the Admin API, inline")
	fs.StringVar(&c.KongAdminClientKeyPEM, "kong-admin-tls-client-key", "", "client key (PEM) for mTLS to the Admin API, inline")
	fs.StringSliceVar(&v.adminSvcs, "kong-admin-svc", nil, "namespace/name of the Kong Admin API Service whose endpoints are the gateways (gateway discovery); repeat or comma-separate for several; replaces --kong-admin-url")
	fs.StringSliceVar(&c.KongAdminSvcPortNames, "kong-admin-svc-port-names", DefaultKongAdminSvcPortNames, "names of the admin Service's ports whose endpoints are gateways, comma-separated")
	fs.DurationVar(&c.DiscoveryReadinessCheckInterval, "gateway-discovery-readiness-check-interval", DefaultDiscoveryReadinessCheckInterval, "how often discovered gateways are checked: pending ones with GET /, ready ones with GET /status (at least 3s)")
	fs.DurationVar(&c.DiscoveryReadinessCheckTimeout, "gateway-discovery-readiness-check-timeout", DefaultDiscoveryReadinessCheckTimeout, "timeout of each of those checks; shorter than the interval")
	fs.StringSliceVar(&c.KongAdminFilterTags, "kong-admin-filter-tag", []string{DefaultFilterTag}, "tags that mark the entities this controller owns in database-backed Kong (all of them), comma-separated or repeated")
	fs.IntVar(&c.KongAdminConcurrency, "kong-admin-concurrency", 10, "maximum concurrent Admin API requests per gateway in database mode")
	fs.DurationVar(&c.KongAdminDumpInterval, "kong-admin-dump-interval", DefaultKongAdminDumpInterval, "in database mode, how often every entity Kong holds is listed (in the background, beside the syncs), which repairs changes made there by others; a sync diffs against what Kong confirmed to the last one (0: every sync lists)")
	fs.StringVar(&c.KongWorkspace, "kong-workspace", "", "Kong Enterprise workspace configured in database mode (default: the default workspace)")
	fs.BoolVar(&c.SkipCACertificates, "skip-ca-certificates", false, "send no CA certificates to Kong (for workspaces that share them)")
	fs.IntVar(&c.KongAdminInitRetries, "kong-admin-init-retries", 60, "how many times to ask a gateway GET / at start before giving up, when leader election is decided from its database mode")
	fs.DurationVar(&c.KongAdminInitRetryDelay, "kong-admin-init-retry-delay", time.Second, "delay between those attempts")
	fs.Float64Var(&v.syncSecs, "proxy-sync-seconds", DefaultProxySyncSeconds, "period of the full resync to Kong, in seconds; changes are synced as they happen")
	fs.Float64Var(&v.timeoutSecs, "proxy-timeout-seconds", DefaultProxyTimeoutSeconds, "timeout of each request to a gateway's Admin API, in seconds")
	fs.BoolVar(&c.EnableReverseSync, "enable-reverse-sync", false, "send the configuration on every resync even when it has not changed")
	fs.BoolVar(&c.UseLastValidConfigForFallback, "use-last-valid-config-for-fallback", false, "fill the objects a fallback configuration leaves out back in from the last configuration a gateway accepted (FallbackConfiguration gate)")

	// What is watched.
	fs.StringVar(&c.IngressClass, "ingress-class", "kong", "ingress class served by this controller")
	fs.StringSliceVar(&c.WatchNamespaces, "watch-namespace", nil, "namespaces to watch, comma-separated or repeated; empty watches all")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig file; empty uses in-cluster config or $KUBECONFIG")
	fs.StringVar(&c.APIServerHost, "apiserver-host", "", "URL of the Kubernetes API server (default: from the kubeconfig or the Pod)")
	fs.StringVar(&c.SecretLabelSelector, "secret-label-selector", "", "read only the Secrets that carry this label with the value \"true\" (default: all)")
	fs.StringVar(&c.ConfigMapLabelSelector, "configmap-label-selector", DefaultConfigMapLabelSelector, "read only the ConfigMaps that carry this label with the value \"true\" (and konghq.com/ca-cert), besides those a BackendTLSPolicy names")
	fs.StringVar(&v.gatewayToReconcile, "gateway-to-reconcile", "", "namespace/name of the only Gateway served (default: every Gateway of the served GatewayClasses)")
	for _, name := range slices.Sorted(maps.Keys(ControllerKinds)) {
		v.enabled[name] = new(bool)
		fs.BoolVar(v.enabled[name], "enable-controller-"+name, true, "read "+strings.Join(ControllerKinds[name], " and ")+" objects (KIC's controller switch)")
	}
	fs.BoolVar(&v.combinedServices, "combined-services-from-different-httproutes", false, "KIC's CombinedServicesFromDifferentHTTPRoutes feature gate, as a flag")

	// Status and Events.
	fs.StringVar(&v.publishService, "publish-service", "", "namespace/name of the Kong proxy Service whose addresses go into Ingress status")
	fs.StringSliceVar(&c.PublishAddresses, "publish-status-address", nil, "addresses (IPs or host names, comma-separated or repeated) for Ingress status; override --publish-service")
	fs.StringVar(&v.publishServiceUDP, "publish-service-udp", "", "namespace/name of the Kong UDP proxy Service whose addresses go into UDPIngress status and Gateways' UDP listeners")
	fs.StringSliceVar(&c.PublishAddressesUDP, "publish-status-address-udp", nil, "addresses for UDPIngress status; override --publish-service-udp")
	fs.BoolVar(&c.UpdateStatus, "update-status", true, "write the published addresses into Ingress status (with --publish-service or --publish-status-address)")
	fs.IntVar(&c.UpdateStatusQueueBufferSize, "update-status-queue-buffer-size", 8192, "KIC's status queue size; accepted, konductor keeps no status queue")
	fs.BoolVar(&c.EmitKubernetesEvents, "emit-kubernetes-events", true, "record Kubernetes Events about the objects translated and the gateways")

	// Leader election.
	fs.BoolVar(&c.LeaderElect, "leader-elect", true, "elect a leader among replicas; only the leader writes to Kong (required with a database). Unset: decided at start as KIC does, on with a database, off for DB-less gateways")
	fs.StringVar(&v.force, "force-leader-election", "", "KIC's override of the leader-election decision: enabled or disabled")
	fs.Lookup("force-leader-election").Hidden = true // hidden in KIC too
	fs.StringVar(&c.ElectionID, "election-id", DefaultElectionID, "name of the Lease used for leader election")
	fs.StringVar(&c.ElectionNamespace, "election-namespace", "", "namespace of the Lease; empty uses the Pod's namespace")
	fs.DurationVar(&c.ElectionLeaseDuration, "election-lease-duration", 15*time.Second, "how long a standby waits before taking a lease its holder stopped renewing")
	fs.DurationVar(&c.ElectionRenewDeadline, "election-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it gives up leadership")
	fs.DurationVar(&c.ElectionRetryPeriod, "election-retry-period", 2*time.Second, "how often candidates try to acquire or renew the lease")

	// Operations.
	fs.DurationVar(&c.CacheSyncTimeout, "cache-sync-timeout", 2*time.Minute, "how long to wait at start for the cache to sync before giving up; 0: controller-runtime's default")
	fs.DurationVar(&c.TermDelay, "term-delay", 0, "how long to go on serving after SIGTERM before stopping")
	fs.StringVar(&c.MetricsBindAddress, "metrics-bind-address", DefaultMetricsAddress, "address of the Prometheus metrics endpoint; 0 disables it")
	fs.StringVar(&c.MetricsAccessFilter, "metrics-access-filter", "off", "access to /metrics: off (open), or rbac (a bearer token the API server authenticates and authorizes)")
	fs.StringVar(&c.HealthProbeBindAddress, "health-probe-bind-address", DefaultHealthProbeAddress, "address of /healthz and /readyz; 0 disables it")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: trace, debug, info, error")
	fs.StringVar(&c.LogFormat, "log-format", "text", "log format: text (console) or json")
	fs.BoolVar(&c.Profiling, "profiling", false, "serve net/http/pprof at /debug/pprof/ on the diagnostics server (--diagnostic-server-port)")
	fs.BoolVar(&c.DumpConfig, "dump-config", false, "serve the last configuration sent and the last refused at /debug/config/ on the diagnostics server")
	fs.BoolVar(&c.DumpSensitiveConfig, "dump-sensitive-config", false, "with --dump-config, show secrets (keys, passwords, certificates' keys) unredacted")
	fs.IntVar(&c.DiagnosticServerPort, "diagnostic-server-port", DefaultDiagnosticsPort, "port of the diagnostics server (with --dump-config or --profiling)")
	fs.Lookup("diagnostic-server-port").Hidden = true // hidden in KIC too

	// Translation.
	fs.StringVar(&c.GatewayAPIControllerName, "gateway-api-controller-name", "konghq.com/kic-gateway-controller", "the controllerName of the GatewayClasses whose Gateways and routes this controller serves (KIC's default)")
	fs.StringVar(&c.ClusterDomain, "cluster-domain", "", "cluster domain appended to the Service names of service-upstream targets (empty: none, as KIC)")
	fs.BoolVar(&c.AllowLocalTargets, "allow-local-targets", false, "let Services make Kong connect to loopback, unspecified and link-local addresses (refused by default: Kong's own Admin API, the cloud metadata service)")
	fs.StringSliceVar(&c.PluginsDenied, "plugins-denied", nil, "plugin names no KongPlugin may use (pre-function,post-function run Lua from any namespace), comma-separated; a KongPlugin of one is refused and what names it left out. KongClusterPlugins are not limited. Off by default")
	fs.StringVar(&c.PluginsDeniedNamespaceSelector, "plugins-denied-namespace-selector", "", "a label selector of the namespaces --plugins-denied applies to (tenant=true); empty: every namespace")
	fs.StringVar(&c.ConsumerScope, "consumer-scope", "", "namespace: a consumer passes the authentication of the routes of its own namespace only (an ACL group per namespace, and an acl plugin on every route an authentication plugin guards); empty: any consumer on any route, as KIC")
	fs.BoolVar(&c.HostOwnership, "host-ownership", false, "serve a host only for the namespace of the oldest Ingress or Gateway API route serving it; another namespace's routes of that host are left out (off: KIC's shared hosts). Every round is then translated whole")
	fs.StringVar(&c.ExternalNameServices, "externalname-services", ExternalNameAllow, "what an ExternalName Service may name: allow (any name, as KIC), same-namespace (only a Service of its own namespace) or deny (no ExternalName Service is a target)")
	fs.BoolVar(&c.EnableDrainSupport, "enable-drain-support", false, "keep terminating endpoints as upstream targets of weight 0, so that existing connections drain")
	fs.StringVar(&v.gates, "feature-gates", "", "KIC's feature gates, Name=true|false comma-separated (see docs/migration-from-kic.md)")

	// Admission webhook.
	fs.StringVar(&c.AdmissionWebhook.ListenAddr, "admission-webhook-listen", "off", "address (host:port) of the validating admission webhook (HTTPS, path /); off disables it")
	fs.StringVar(&c.AdmissionWebhook.CertFile, "admission-webhook-cert-file", "", "PEM certificate file of the admission webhook, reloaded when it changes; with no certificate given, "+DefaultAdmissionWebhookCertFile)
	fs.StringVar(&c.AdmissionWebhook.KeyFile, "admission-webhook-key-file", "", "PEM private key file of the admission webhook; with no key given, "+DefaultAdmissionWebhookKeyFile)
	fs.StringVar(&c.AdmissionWebhook.Cert, "admission-webhook-cert", "", "PEM certificate of the admission webhook (instead of --admission-webhook-cert-file)")
	fs.StringVar(&c.AdmissionWebhook.Key, "admission-webhook-key", "", "PEM private key of the admission webhook (instead of --admission-webhook-key-file)")
	fs.StringVar(&c.AdmissionWebhook.ClientCAFile, "admission-webhook-client-ca-file", "", "PEM CA bundle: the webhook serves only callers with a client certificate it signed (the API server's, configured in its AdmissionConfiguration); empty: any caller")

	// Kubernetes API.
	fs.Float32Var(&c.APIServerQPS, "apiserver-qps", 100, "requests per second to the Kubernetes API")
	fs.IntVar(&c.APIServerBurst, "apiserver-burst", 300, "request burst to the Kubernetes API")
	fs.BoolVar(&c.APIServerCompression, "apiserver-compression", false, "ask the Kubernetes API server for gzip-compressed answers (worth it only on a slow link to it: it costs the API server CPU on every large list)")

	// Konnect (KIC's flags and defaults; docs/konnect.md).
	k := &c.Konnect
	fs.BoolVar(&k.SyncEnabled, "konnect-sync-enabled", false, "mirror the configuration the gateways took into a Konnect control plane, and report the controller and its gateways as its nodes")
	fs.BoolVar(&k.LicensingEnabled, "konnect-licensing-enabled", false, "take the Kong Enterprise license from Konnect (instead of KongLicense objects)")
	fs.BoolVar(&k.LicenseStorageEnabled, "konnect-license-storage-enabled", true, "keep the license from Konnect in a Secret (konnect-license-<control plane>), for a start while Konnect is unreachable")
	fs.DurationVar(&k.InitialLicensePollingPeriod, "konnect-initial-license-polling-period", DefaultKonnectInitialLicensePeriod, "how often the license is asked for until one is held")
	fs.DurationVar(&k.LicensePollingPeriod, "konnect-license-polling-period", DefaultKonnectLicensePeriod, "how often the license is asked for once one is held")
	fs.StringVar(&k.ControlPlaneID, "konnect-control-plane-id", "", "ID of the Konnect control plane")
	fs.StringVar(&k.ControlPlaneID, "konnect-runtime-group-id", "", "deprecated: use --konnect-control-plane-id")
	fs.StringVar(&k.Address, "konnect-address", DefaultKonnectAddress, "base address of the Konnect API")
	fs.StringVar(&k.TLSClientCert, "konnect-tls-client-cert", "", "Konnect TLS client certificate (PEM)")
	fs.StringVar(&k.TLSClientCertFile, "konnect-tls-client-cert-file", "", "Konnect TLS client certificate file (PEM)")
	fs.StringVar(&k.TLSClientKey, "konnect-tls-client-key", "", "Konnect TLS client key (PEM)")
	fs.StringVar(&k.TLSClientKeyFile, "konnect-tls-client-key-file", "", "Konnect TLS client key file (PEM)")
	fs.DurationVar(&k.UploadConfigPeriod, "konnect-upload-config-period", DefaultKonnectUploadConfigPeriod, "period of the upload of the configuration to Konnect (at least 10s)")
	fs.DurationVar(&k.RefreshNodePeriod, "konnect-refresh-node-period", DefaultKonnectRefreshNodePeriod, "period of the report of the controller and its gateways as Konnect nodes (at least 30s)")
	fs.IntVar(&k.ConfigSyncConcurrency, "konnect-config-sync-concurrency", DefaultKonnectConfigSyncConcurrency, "concurrent requests to Konnect while uploading the configuration")
	fs.BoolVar(&k.ConsumersSyncDisabled, "konnect-disable-consumers-sync", false, "upload no consumers to Konnect")
	_ = fs.MarkDeprecated("konnect-runtime-group-id", "use --konnect-control-plane-id instead")
	for _, name := range slices.Sorted(maps.Keys(kicFlagsWithoutEffect)) {
		f := fs.VarPF(&ignoredValue{}, name, "", "accepted for KIC compatibility; no effect: "+kicFlagsWithoutEffect[name].why)
		if kicFlagsWithoutEffect[name].boolean {
			f.NoOptDefVal = "true" // a bare --anonymous-reports must not eat the next argument
		}
		f.Hidden = true
	}
}

// namespacedName reads KIC's namespace/name flag values.
func namespacedName(flag, s string) (types.NamespacedName, error) {
	ns, name, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("--%s: %q is not namespace/name", flag, s)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// applyEnv sets every flag not given on the command line from CONTROLLER_<NAME>, as KIC does:
// the variable is one value (a list variable is one comma-separated list), a bad value is an
// error naming the variable, and a CONTROLLER_ variable that names no flag is ignored (a Note).
func (c *Config) applyEnv(fs *pflag.FlagSet, lookup func(string) (string, bool), environ []string) error {
	known := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { known[EnvVarName(f.Name)] = true })
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, EnvPrefix) && !known[name] {
			c.Notes = append(c.Notes, Note{Flag: name, Why: "names no flag (--" +
				strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(name, EnvPrefix)), "_", "-") + "); ignored, as in KIC"})
		}
	}
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed {
			return
		}
		name := EnvVarName(f.Name)
		v, ok := lookup(name)
		if !ok {
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

func splitList(s string) []string { return trimList(strings.Split(s, ",")) }

// trimList drops the spaces around each item and the empty items of a list flag's value.
func trimList(l []string) []string {
	var out []string
	for _, p := range l {
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
	c.validateKonnect(bad)
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
	for _, p := range []struct {
		inline, file string
		value, path  string
	}{
		{"kong-admin-ca-cert", "kong-admin-ca-cert-file", c.KongAdminCACert, c.KongAdminCACertFile},
		{"kong-admin-tls-client-cert", "kong-admin-tls-client-cert-file", c.KongAdminClientCertPEM, c.KongAdminClientCert},
		{"kong-admin-tls-client-key", "kong-admin-tls-client-key-file", c.KongAdminClientKeyPEM, c.KongAdminClientKey},
	} {
		if p.value != "" && p.path != "" {
			bad(p.inline, "conflicts with --%s; give one", p.file)
		}
	}
	if (c.KongAdminClientCert == "" && c.KongAdminClientCertPEM == "") != (c.KongAdminClientKey == "" && c.KongAdminClientKeyPEM == "") {
		bad("kong-admin-tls-client-cert", "the client certificate (--kong-admin-tls-client-cert[-file]) and its key (--kong-admin-tls-client-key[-file]) go together")
	}
	if len(c.KongAdminFilterTags) == 0 {
		bad("kong-admin-filter-tag", "must not be empty: it is how konductor tells its entities from hand-made ones")
	}
	if c.KongAdminDumpInterval < 0 {
		bad("kong-admin-dump-interval", "must not be negative, got %s", c.KongAdminDumpInterval)
	}
	if c.KongAdminConcurrency < 1 {
		bad("kong-admin-concurrency", "must be at least 1, got %d", c.KongAdminConcurrency)
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
	if c.ConsumerScope != "" && c.ConsumerScope != "namespace" {
		bad("consumer-scope", "%q is not namespace or empty", c.ConsumerScope)
	}
	if _, err := labels.Parse(c.PluginsDeniedNamespaceSelector); err != nil {
		bad("plugins-denied-namespace-selector", "%q is not a label selector: %v", c.PluginsDeniedNamespaceSelector, err)
	}
	switch c.ExternalNameServices {
	case ExternalNameAllow, ExternalNameSameNamespace, ExternalNameDeny:
	default:
		bad("externalname-services", "%q is not allow, same-namespace or deny", c.ExternalNameServices)
	}
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
	case "trace", "debug", "info", "error":
	default:
		bad("log-level", "must be trace, debug, info or error, got %q", c.LogLevel)
	}
	switch c.LogFormat {
	case "text", "console", "json":
	default:
		bad("log-format", "must be text or json, got %q", c.LogFormat)
	}
	switch c.MetricsAccessFilter {
	case "off", "rbac":
	default:
		bad("metrics-access-filter", "must be off or rbac, got %q", c.MetricsAccessFilter)
	}
	if c.DiagnosticServerPort < 0 || c.DiagnosticServerPort > 65535 {
		bad("diagnostic-server-port", "must be a port number, got %d", c.DiagnosticServerPort)
	}
	for _, d := range []struct {
		flag string
		d    time.Duration
	}{{"term-delay", c.TermDelay}, {"cache-sync-timeout", c.CacheSyncTimeout}} {
		if d.d < 0 {
			bad(d.flag, "must not be negative, got %s", d.d)
		}
	}
	if c.UpdateStatusQueueBufferSize < 0 {
		bad("update-status-queue-buffer-size", "must not be negative, got %d", c.UpdateStatusQueueBufferSize)
	}
	for _, sel := range []struct{ flag, key string }{{"secret-label-selector", c.SecretLabelSelector}, {"configmap-label-selector", c.ConfigMapLabelSelector}} {
		if sel.key == "" {
			continue
		}
		if errs := validation.IsQualifiedName(sel.key); len(errs) > 0 {
			bad(sel.flag, "%q is not a label key: %s", sel.key, strings.Join(errs, "; "))
		}
	}
	return errors.Join(errs...)
}

// validateAdmissionWebhook applies KIC's rules to the --admission-webhook-* flags and fills in
// KIC's default certificate files when no certificate is given.
// validateKonnect checks KIC's Konnect flags as KIC's validateKonnect does, when sync is on:
// an address, a control plane, a client certificate and key (inline or a file, not both),
// an upload period of at least 10s. Licensing alone is checked the same way here (KIC fails
// at run time instead). KIC also requires --kong-admin-svc with sync; konductor syncs to
// Konnect whatever way its gateways are given.
func (c *Config) validateKonnect(bad func(flag, format string, a ...any)) {
	k := c.Konnect
	if !k.Enabled() {
		return
	}
	if k.Address == "" {
		bad("konnect-address", "required with Konnect")
	} else if p, err := url.Parse(k.Address); err != nil || p.Scheme != "https" || p.Host == "" {
		bad("konnect-address", "%q is not an https URL", k.Address)
	}
	if k.ControlPlaneID == "" {
		bad("konnect-control-plane-id", "required with Konnect")
	}
	for _, pem := range []struct{ flag, inline, file string }{
		{"konnect-tls-client-cert", k.TLSClientCert, k.TLSClientCertFile},
		{"konnect-tls-client-key", k.TLSClientKey, k.TLSClientKeyFile},
	} {
		switch {
		case pem.inline != "" && pem.file != "":
			bad(pem.flag, "give it inline or as --%s-file, not both", pem.flag)
		case pem.inline == "" && pem.file == "":
			bad(pem.flag, "required with Konnect (inline, or --%s-file): Konnect authenticates the controller by its client certificate", pem.flag)
		}
	}
	if k.SyncEnabled && k.UploadConfigPeriod < MinKonnectUploadConfigPeriod {
		bad("konnect-upload-config-period", "must be at least %s, got %s", MinKonnectUploadConfigPeriod, k.UploadConfigPeriod)
	}
	if k.SyncEnabled && k.ConfigSyncConcurrency < 1 {
		bad("konnect-config-sync-concurrency", "must be at least 1, got %d", k.ConfigSyncConcurrency)
	}
}

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

// FlagUsages is the controller's flags as `konductor run --help` lists them (name, type,
// default, description, in the order defined), for help and shell completion that cannot
// fall behind the flags the parser takes.
func FlagUsages() string {
	fs := pflag.NewFlagSet("konductor", pflag.ContinueOnError)
	fs.SortFlags = false
	(&Config{}).defineFlags(fs, &flagValues{enabled: map[string]*bool{}})
	return fs.FlagUsages()
}
