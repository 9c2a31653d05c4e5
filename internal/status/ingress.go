package status

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/dataplane"
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
}

// IngressUpdater writes status.loadBalancer of every Ingress the controller serves. It is a
// leader-only runnable (invariant 7): a sync round asks it to run, it runs apart from the
// sync loop so that status writes never delay a sync, and it writes only the Ingresses whose
// status differs.
type IngressUpdater struct {
	runner
	opts   IngressOptions
	source dataplane.SnapshotSource
	reader client.Reader // for the publish Service, which may lie outside the watched namespaces
	writer client.Client
}

// NewIngressUpdater returns an updater; it does nothing until it runs and a round succeeds.
func NewIngressUpdater(opts IngressOptions, source dataplane.SnapshotSource, reader client.Reader, writer client.Client, log logr.Logger) *IngressUpdater {
	u := &IngressUpdater{opts: opts, source: source, reader: reader, writer: writer}
	u.runner = newRunner("Ingress status", log, u.Update)
	return u
}

// Enabled reports whether there is any address to publish.
func (u *IngressUpdater) Enabled() bool {
	return len(u.opts.PublishAddresses) > 0 || u.opts.PublishService != ""
}

// Report implements dataplane.Reporter: a round that reached at least one gateway (which
// took the configuration, or all of it but refused objects) asks for an update. It never
// blocks the loop.
func (u *IngressUpdater) Report(_ context.Context, r dataplane.Round) {
	if r.SnapshotErr != nil {
		return
	}
	for _, g := range r.Gateways {
		var rej *dataplane.RejectedError
		if !g.Skipped && (g.Err == nil || errors.As(g.Err, &rej) && rej.RestApplied) {
			u.trigger.Request()
			return
		}
	}
}

// Update writes the current addresses into every served Ingress whose status differs.
func (u *IngressUpdater) Update(ctx context.Context) error {
	want, err := u.addresses(ctx)
	if err != nil {
		return err
	}
	snap, err := u.source.Snapshot(ctx)
	if err != nil {
		return err
	}
	var errs []string
	for _, ing := range snap.Ingresses {
		if slices.EqualFunc(ing.Status.LoadBalancer.Ingress, want, equalLB) {
			continue
		}
		patch := client.MergeFrom(ing)
		updated := ing.DeepCopy() // the snapshot's objects belong to the cache
		updated.Status.LoadBalancer.Ingress = want
		if err := u.writer.Status().Patch(ctx, updated, patch); err != nil {
			errs = append(errs, fmt.Sprintf("Ingress %s/%s: %v", ing.Namespace, ing.Name, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func equalLB(a, b netv1.IngressLoadBalancerIngress) bool {
	return a.IP == b.IP && a.Hostname == b.Hostname
}

func (u *IngressUpdater) addresses(ctx context.Context) ([]netv1.IngressLoadBalancerIngress, error) {
	if len(u.opts.PublishAddresses) > 0 {
		return lbIngress(u.opts.PublishAddresses), nil
	}
	ns, name, ok := strings.Cut(u.opts.PublishService, "/")
	if !ok {
		return nil, fmt.Errorf("--publish-service %q: want namespace/name", u.opts.PublishService)
	}
	var svc corev1.Service
	if err := u.reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &svc); err != nil {
		return nil, fmt.Errorf("--publish-service %s: %w", u.opts.PublishService, err)
	}
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
	return lbIngress(addrs), nil
}

// lbIngress turns addresses into status entries, IPs first then host names, each sorted, so
// that the comparison with what the Ingress holds does not depend on order.
func lbIngress(addrs []string) []netv1.IngressLoadBalancerIngress {
	out := make([]netv1.IngressLoadBalancerIngress, 0, len(addrs))
	for _, a := range addrs {
		if net.ParseIP(a) != nil {
			out = append(out, netv1.IngressLoadBalancerIngress{IP: a})
		} else {
			out = append(out, netv1.IngressLoadBalancerIngress{Hostname: a})
		}
	}
	slices.SortFunc(out, func(a, b netv1.IngressLoadBalancerIngress) int {
		if (a.IP == "") != (b.IP == "") {
			if a.IP != "" {
				return -1
			}
			return 1
		}
		return strings.Compare(a.IP+a.Hostname, b.IP+b.Hostname)
	})
	return out
}

var _ dataplane.Reporter = (*IngressUpdater)(nil)
var _ dataplane.SnapshotSource = (*store.Store)(nil)
