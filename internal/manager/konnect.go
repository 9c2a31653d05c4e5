package manager

import (
	"crypto/x509"
	"errors"
	"net/url"
	"os"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"github.com/kong/go-kong/kong"
	"k8s.io/apimachinery/pkg/types"
	ctrlmanager "sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/konductor/konductor/internal/config"
	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/konnect"
)

// konnectParts are what --konnect-* adds (docs/konnect.md): the reporters the sync loop tells
// (the configuration sync, the node agent) and the license the rounds render.
type konnectParts struct {
	reporters dataplane.Reporters
	license   func() *kong.License // nil without --konnect-licensing-enabled
}

// Konnect reports the controller as a node named after its Pod (KIC's
// resolveControllerHostnameForKonnect), with this version.
const konnectUserAgent = "konductor"

// setupKonnect adds the Konnect runnables to mgr: with --konnect-sync-enabled the
// configuration sync and the node agent (leader only), with --konnect-licensing-enabled the
// license agent (every replica holds the license, so a new leader renders it at once).
// Nothing of it is on the gateways' path.
func setupKonnect(cfg *config.Config, version string, roots *x509.CertPool, mgr ctrlmanager.Manager, flavors *dataplane.RouterFlavors, podOf podLookup, newRound func(), metrics konnect.Recorder, log logr.Logger) (*konnectParts, error) {
	parts := &konnectParts{}
	k := cfg.Konnect
	if !k.Enabled() {
		return parts, nil
	}
	if version == "" {
		version = "dev"
	}
	agent := konnectUserAgent + "/" + version
	opts, err := konnect.OptionsFrom(k, agent)
	if err != nil {
		return nil, err
	}
	opts.RootCAs = roots
	log = log.WithName("konnect")
	if k.LicensingEnabled {
		lopts := konnect.LicenseOptions{InitialPeriod: k.InitialLicensePollingPeriod, Period: k.LicensePollingPeriod,
			Changed: newRound, Log: log.WithName("license")}
		if k.LicenseStorageEnabled {
			ns := podNamespace(cfg.Pod)
			if ns == "" {
				return nil, errors.New("--konnect-license-storage-enabled: the license Secret goes to the controller's namespace, which is unknown (no POD_NAMESPACE)")
			}
			lopts.Store = konnect.NewSecretStore(mgr.GetClient(), mgr.GetAPIReader(), ns, k.ControlPlaneID)
		}
		la := konnect.NewLicenseAgent(opts, lopts)
		if err := mgr.Add(la); err != nil {
			return nil, err
		}
		parts.license = la.License
	}
	if k.SyncEnabled {
		cs, err := konnect.NewConfigSync(opts, konnect.SyncOptions{Period: k.UploadConfigPeriod, Concurrency: k.ConfigSyncConcurrency,
			NoConsumers: k.ConsumersSyncDisabled, KongVersion: flavors.KongVersion, Recorder: metrics, Log: log.WithName("sync")})
		if err != nil {
			return nil, err
		}
		nodes := konnect.NewNodeAgent(opts, konnect.NodeOptions{
			Hostname: konnectHostname(cfg.Pod), ID: instanceUUID(), Version: agent, Period: k.RefreshNodePeriod,
			Gateways: func() []konnect.GatewayNode { return gatewayNodes(flavors.Nodes(), podOf) }, KonnectFailed: cs.Failed,
			Log: log.WithName("nodes"),
		})
		for _, r := range []interface {
			dataplane.Reporter
			ctrlmanager.Runnable
		}{cs, nodes} {
			if err := mgr.Add(r); err != nil {
				return nil, err
			}
			parts.reporters = append(parts.reporters, r)
		}
	}
	return parts, nil
}

// konnectHostname names the controller's node: <namespace>/<pod> in a Pod (KIC's), else the
// host name.
func konnectHostname(pod config.Pod) string {
	if pod.Name != "" && pod.Namespace != "" {
		return pod.Namespace + "/" + pod.Name
	}
	h, _ := os.Hostname()
	return h
}

// podLookup says which Pod serves a discovered gateway's Admin API URL; nil without gateway
// discovery.
type podLookup func(url string) (types.NamespacedName, bool)

// gatewayNodes are the gateways as Konnect nodes, with Kong's node_id and version, named as
// KIC names them (its GatewayClientGetter): <namespace>/<pod> for a discovered gateway,
// gateway_<host:port> of the Admin API URL for one given by URL.
func gatewayNodes(ns []dataplane.GatewayNode, podOf podLookup) []konnect.GatewayNode {
	out := make([]konnect.GatewayNode, 0, len(ns))
	for _, n := range ns {
		name := n.URL
		if u, err := url.Parse(n.URL); err == nil && u.Host != "" {
			name = u.Host
		}
		name = "gateway_" + name
		if podOf != nil {
			if pod, ok := podOf(n.URL); ok {
				name = pod.String()
			}
		}
		out = append(out, konnect.GatewayNode{ID: n.NodeID, Hostname: name, Version: n.Version})
	}
	return out
}

// instanceUUID identifies this controller's node when it is made (KIC's manager instance ID).
func instanceUUID() string { return uuid.NewString() }
