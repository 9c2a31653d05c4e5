package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
)

// IngressOptions says where Ingresses' load-balancer addresses come from (KIC's flags).
type IngressOptions struct {
	// PublishAddresses (--publish-status-address) are IPs or host names; when set they are
	// the addresses, whatever the Service says.
	PublishAddresses []string
	// PublishService (--publish-service, "namespace/name") is the Kong proxy Service: its
	// load-balancer addresses, else its external IPs, else its cluster IP.
	PublishService string
	// PublishAddressesUDP and PublishServiceUDP (--publish-status-address-udp,
	// --publish-service-udp) are the same for the UDP proxy: UDPIngresses' addresses, added
	// to Gateways'. Unset, UDPIngresses get the addresses above, as in KIC.
	PublishAddressesUDP []string
	PublishServiceUDP   string
}

// udp is the options of UDPIngresses' addresses: the UDP ones when given, else o.
func (o IngressOptions) udp() IngressOptions {
	if len(o.PublishAddressesUDP) == 0 && o.PublishServiceUDP == "" {
		return o
	}
	return IngressOptions{PublishAddresses: o.PublishAddressesUDP, PublishService: o.PublishServiceUDP}
}

// tcp is the options of the (TCP) proxy's addresses alone.
func (o IngressOptions) tcp() IngressOptions {
	return IngressOptions{PublishAddresses: o.PublishAddresses, PublishService: o.PublishService}
}

// hasTCP reports whether the proxy's addresses are given.
func (o IngressOptions) hasTCP() bool { return len(o.PublishAddresses) > 0 || o.PublishService != "" }

// hasUDP reports whether the UDP proxy has addresses of its own.
func (o IngressOptions) hasUDP() bool {
	return len(o.PublishAddressesUDP) > 0 || o.PublishServiceUDP != ""
}

// IngressUpdater writes status.loadBalancer of every Ingress, TCPIngress and UDPIngress the
// controller serves. It is a leader-only runnable (invariant 7): a sync round asks it to run,
// it runs apart from the sync loop so that status writes never delay a sync, and it writes
// only the objects whose status differs.
type IngressUpdater struct {
	runner
	statusWriter
	opts   IngressOptions
	source dataplane.SnapshotSource
	reader client.Reader // for the publish Service, which may lie outside the watched namespaces

	mu sync.Mutex
	// leftOut are the objects of the latest round a gateway took that no gateway holds: Kong
	// refused them, or they were left out with them (a fallback configuration, database
	// mode's isolation). They get no address: Kong does not route them.
	leftOut map[kongstate.ObjectRef]bool
}

// NewIngressUpdater returns an updater; it does nothing until it runs and a round succeeds.
func NewIngressUpdater(opts IngressOptions, source dataplane.SnapshotSource, reader client.Reader, writer client.Client, log logr.Logger) *IngressUpdater {
	u := &IngressUpdater{opts: opts, source: source, reader: reader, statusWriter: statusWriter{client: writer}}
	u.runner = newRunner("Ingress status", log, u.Update)
	return u
}

// Enabled reports whether there is any address to publish.
func (u *IngressUpdater) Enabled() bool {
	return u.opts.hasTCP() || u.opts.hasUDP()
}

// Report implements dataplane.Reporter: a round whose configuration at least one gateway took
// (whole, all but refused objects, or a fallback configuration without them) asks for an
// update, which leaves out the objects no such gateway holds. It never blocks the loop.
func (u *IngressUpdater) Report(_ context.Context, r dataplane.Round) {
	if r.SnapshotErr != nil || !reachedAnyGateway(r) {
		return
	}
	leftOut := leftOutEverywhere(r.Gateways)
	u.mu.Lock()
	u.leftOut = leftOut
	u.mu.Unlock()
	u.trigger.Request()
}

// leftOutEverywhere are the objects (objgraph.Key) that every gateway which took a
// configuration of the round took without: all but refused objects (database mode: the
// refused entities' objects and those isolated with them), or a fallback configuration (the
// objects it excluded and did not take from the last valid configuration instead). A gateway
// that took the configuration whole holds every object.
func leftOutEverywhere(gateways []dataplane.GatewayResult) map[kongstate.ObjectRef]bool {
	var out map[kongstate.ObjectRef]bool
	for _, g := range gateways {
		if !tookConfiguration(g) {
			continue
		}
		left := map[kongstate.ObjectRef]bool{}
		var rej *dataplane.RejectedError
		if errors.As(g.Err, &rej) {
			if fb := g.Fallback; fb != nil && fb.Err == nil {
				backfilled := map[kongstate.ObjectRef]bool{}
				for _, x := range fb.Backfilled {
					backfilled[objgraph.Key(x)] = true
				}
				for _, x := range fb.Excluded {
					if !backfilled[objgraph.Key(x)] {
						left[objgraph.Key(x)] = true
					}
				}
			} else {
				for _, e := range rej.Entities {
					left[objgraph.Key(e.Object)] = true
				}
				for _, x := range rej.Excluded {
					left[objgraph.Key(x)] = true
				}
			}
		}
		if out == nil {
			out = left
			continue
		}
		for x := range out {
			if !left[x] {
				delete(out, x)
			}
		}
	}
	return out
}

// Update writes the current addresses into every served Ingress, TCPIngress and UDPIngress
// whose status differs.
func (u *IngressUpdater) Update(ctx context.Context) error {
	var want []netv1.IngressLoadBalancerIngress
	var err error
	if u.opts.hasTCP() {
		if want, err = loadBalancerAddresses(ctx, u.opts.tcp(), u.reader); err != nil {
			return err
		}
	}
	wantUDP := want
	if u.opts.hasUDP() {
		if wantUDP, err = loadBalancerAddresses(ctx, u.opts.udp(), u.reader); err != nil {
			return err
		}
	}
	snap, err := store.SnapshotOf(ctx, u.source, loadBalancerKinds)
	if err != nil {
		return err
	}
	// One merge patch serves every Ingress: it sets status.loadBalancer.ingress (a list, which
	// a merge patch replaces whole) and nothing else, which is what a diff of each Ingress
	// with its copy gave, without copying, marshalling and diffing each one (a fresh leader
	// writes thousands).
	patch, err := loadBalancerPatch(want)
	if err != nil {
		return err
	}
	patchUDP, err := loadBalancerPatch(wantUDP)
	if err != nil {
		return err
	}
	u.mu.Lock()
	leftOut := u.leftOut
	u.mu.Unlock()
	// Kong routes nothing of an object left out: it keeps the status it had (KIC writes an
	// object's addresses only once a configuration with it was applied).
	served := func(gvk schema.GroupVersionKind, namespace, name string) bool {
		return !leftOut[kongstate.ObjectRef{Group: gvk.Group, Kind: gvk.Kind, Namespace: namespace, Name: name}]
	}
	var errs []string
	write := func(kind string, updated client.Object) {
		patch := patch
		if kind == "UDPIngress" {
			patch = patchUDP
		}
		if err := u.writeStatus(ctx, updated, patch); err != nil {
			errs = append(errs, fmt.Sprintf("%s %s/%s: %v", kind, updated.GetNamespace(), updated.GetName(), err))
		}
	}
	// The answers are decoded into new objects: the snapshot's objects belong to the cache.
	for _, ing := range snap.Ingresses {
		if u.opts.hasTCP() && served(gvkIngress, ing.Namespace, ing.Name) && !slices.EqualFunc(ing.Status.LoadBalancer.Ingress, want, equalLB) {
			write("Ingress", &netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ing.Namespace, Name: ing.Name}})
		}
	}
	// TCPIngress and UDPIngress carry the same addresses in the same JSON shape (a core/v1
	// LoadBalancerStatus), written under the same conditions as KIC does for the three kinds:
	// the store's snapshot holds only those of our class.
	for _, ing := range snap.TCPIngresses {
		if u.opts.hasTCP() && served(gvkTCPIngress, ing.Namespace, ing.Name) && !slices.EqualFunc(ing.Status.LoadBalancer.Ingress, want, equalCoreLB) {
			write("TCPIngress", &kongv1beta1.TCPIngress{ObjectMeta: metav1.ObjectMeta{Namespace: ing.Namespace, Name: ing.Name}})
		}
	}
	for _, ing := range snap.UDPIngresses {
		if served(gvkUDPIngress, ing.Namespace, ing.Name) && !slices.EqualFunc(ing.Status.LoadBalancer.Ingress, wantUDP, equalCoreLB) {
			write("UDPIngress", &kongv1beta1.UDPIngress{ObjectMeta: metav1.ObjectMeta{Namespace: ing.Namespace, Name: ing.Name}})
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// The kinds IngressUpdater writes, as the translation names their objects.
var (
	gvkIngress    = store.KindIngress.GroupVersionKind()
	gvkTCPIngress = store.KindTCPIngress.GroupVersionKind()
	gvkUDPIngress = store.KindUDPIngress.GroupVersionKind()
)

// loadBalancerKinds are the kinds whose status.loadBalancer IngressUpdater writes.
var loadBalancerKinds = store.NewKindSet(store.KindIngress, store.KindTCPIngress, store.KindUDPIngress)

func equalLB(a, b netv1.IngressLoadBalancerIngress) bool {
	return a.IP == b.IP && a.Hostname == b.Hostname
}

func equalCoreLB(a corev1.LoadBalancerIngress, b netv1.IngressLoadBalancerIngress) bool {
	return a.IP == b.IP && a.Hostname == b.Hostname
}

// loadBalancerPatch is the merge patch that sets status.loadBalancer.ingress (a list, which a
// merge patch replaces whole) to want and nothing else.
func loadBalancerPatch(want []netv1.IngressLoadBalancerIngress) (client.Patch, error) {
	lb, err := json.Marshal(want)
	if err != nil {
		return nil, err
	}
	return client.RawPatch(types.MergePatchType, []byte(`{"status":{"loadBalancer":{"ingress":`+string(lb)+`}}}`)), nil
}

func loadBalancerAddresses(ctx context.Context, opts IngressOptions, reader client.Reader) ([]netv1.IngressLoadBalancerIngress, error) {
	addrs, err := publishedAddresses(ctx, opts, reader)
	if err != nil {
		return nil, err
	}
	out := make([]netv1.IngressLoadBalancerIngress, 0, len(addrs))
	for _, a := range addrs {
		if isIP(a) {
			out = append(out, netv1.IngressLoadBalancerIngress{IP: a})
		} else {
			out = append(out, netv1.IngressLoadBalancerIngress{Hostname: a})
		}
	}
	return out, nil
}

// publishedAddresses are the addresses the proxy is reached at, for Ingresses' and Gateways'
// status: --publish-status-address when set, else the --publish-service Service's
// (serviceAddresses). They come IPs first, then host names, each sorted, so that comparing
// them with what an object holds does not depend on order.
func publishedAddresses(ctx context.Context, opts IngressOptions, reader client.Reader) ([]string, error) {
	return (&serviceReader{reader: reader}).addresses(ctx, opts)
}

// addresses is publishedAddresses, reading the publish Services through r.
func (r *serviceReader) addresses(ctx context.Context, opts IngressOptions) ([]string, error) {
	if opts.hasUDP() {
		// Gateways: the TCP and the UDP proxy's addresses together.
		var tcp []string
		if opts.hasTCP() {
			var err error
			if tcp, err = r.addresses(ctx, opts.tcp()); err != nil {
				return nil, err
			}
		}
		udp, err := r.addresses(ctx, opts.udp())
		if err != nil {
			return nil, err
		}
		return slices.Compact(sortAddresses(append(tcp, udp...))), nil // an address of both once
	}
	if len(opts.PublishAddresses) > 0 {
		return sortAddresses(opts.PublishAddresses), nil
	}
	if _, _, ok := strings.Cut(opts.PublishService, "/"); !ok {
		return nil, fmt.Errorf("--publish-service %q: want namespace/name", opts.PublishService)
	}
	svc, err := r.service(ctx, opts.PublishService)
	if err != nil {
		return nil, fmt.Errorf("--publish-service %s: %w", opts.PublishService, err)
	}
	return sortAddresses(serviceAddresses(svc)), nil
}

// serviceAddresses are the addresses a publish Service gives: its load-balancer addresses,
// else its external IPs, else its cluster IP.
func serviceAddresses(svc *corev1.Service) []string {
	var addrs []string
	for _, lb := range svc.Status.LoadBalancer.Ingress {
		if lb.IP != "" {
			addrs = append(addrs, lb.IP)
		}
		if lb.Hostname != "" {
			addrs = append(addrs, lb.Hostname)
		}
	}
	if len(addrs) == 0 {
		addrs = svc.Spec.ExternalIPs
	}
	if len(addrs) == 0 && svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone {
		addrs = []string{svc.Spec.ClusterIP}
	}
	return addrs
}

func isIP(a string) bool { return net.ParseIP(a) != nil }

// sortAddresses returns a sorted copy of addrs: IPs first, then host names.
func sortAddresses(addrs []string) []string {
	out := slices.Clone(addrs)
	slices.SortFunc(out, func(a, b string) int {
		if isIP(a) != isIP(b) {
			if isIP(a) {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return out
}

var _ dataplane.Reporter = (*IngressUpdater)(nil)
var _ dataplane.SnapshotSource = (*store.Store)(nil)
