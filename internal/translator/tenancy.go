package translator

import (
	"slices"

	"github.com/kong/go-kong/kong"
	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongstate"
)

// Opt-in tenancy beyond KIC (docs/security.md, issue #44 item 10), off by default: Kong's model
// is global, so a namespace's objects can reach what another's make. These options narrow it
// for clusters whose namespaces are tenants.

// pluginDenied says why kp may not be used (--plugins-denied), "" when it may: its plugin is
// denied in its namespace. A selector that does not parse (the controller's configuration
// checks it) denies everywhere rather than nowhere.
func (b *builder) pluginDenied(kp *kongv1.KongPlugin) string {
	if !slices.Contains(b.opts.PluginsDenied, kp.PluginName) {
		return ""
	}
	if b.opts.PluginsDeniedNamespaces != "" {
		// Which namespaces it selects depends on their labels: a label changed is a change.
		b.refer(kp, gvkKongPlugin, anyNamespaceLabels)
		if sel, err := labels.Parse(b.opts.PluginsDeniedNamespaces); err == nil && !sel.Matches(labels.Set(b.snap.NamespaceLabels[kp.Namespace])) {
			return ""
		}
	}
	return "plugin " + kp.PluginName + " is not allowed in namespace " + kp.Namespace + " (--plugins-denied); a cluster administrator's KongClusterPlugin may use it"
}

// claimHosts leaves out, with --host-ownership, every object whose Kong routes name a host
// the routes of an older object of another namespace name: a host belongs to the namespace of
// the oldest Ingress or Gateway API route serving it (creationTimestamp, then namespace and
// name), so that a tenant cannot add paths, regex routes that outrank exact ones, or plugins
// on another's host. Hosts are compared as written: a wildcard is a host of its own.
func (b *builder) claimHosts() {
	type claimant struct {
		obj client.Object
		gvk schema.GroupVersionKind
	}
	byRef := map[kongstate.ObjectRef]claimant{}
	hosts := map[string][]claimant{}
	var order []string
	for _, n := range b.kongServiceNames() {
		for _, r := range b.kongServices[n].routes {
			tags := make([]string, 0, len(r.Tags))
			for _, t := range r.Tags {
				tags = append(tags, kong.StringValue(t))
			}
			ref, ok := kongstate.ObjectRefFromTags(tags)
			if !ok {
				continue
			}
			key := kongstate.ObjectRef{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
			c, known := byRef[key]
			if !known {
				obj, gvk := b.sourceObject(ref)
				if obj == nil {
					continue
				}
				c = claimant{obj, gvk}
				byRef[key] = c
			}
			for _, h := range r.Hosts {
				if h == nil {
					continue
				}
				if _, seen := hosts[*h]; !seen {
					order = append(order, *h)
				}
				if !slices.ContainsFunc(hosts[*h], func(o claimant) bool { return o.obj == c.obj }) {
					hosts[*h] = append(hosts[*h], c)
				}
			}
		}
	}
	refused := map[client.Object]bool{}
	for _, h := range order {
		cs := hosts[h]
		owner := cs[0]
		for _, c := range cs[1:] {
			if olderThan(c.obj, owner.obj) {
				owner = c
			}
		}
		for _, c := range cs {
			if c.obj.GetNamespace() == owner.obj.GetNamespace() || refused[c.obj] {
				continue
			}
			refused[c.obj] = true
			b.share("host "+h, c.obj, c.gvk)
			b.share("host "+h, owner.obj, owner.gvk)
			b.refuseBound(c.obj, c.gvk, "", "host %q belongs to namespace %s (%s %s/%s is the oldest object serving it; --host-ownership)",
				h, owner.obj.GetNamespace(), owner.gvk.Kind, owner.obj.GetNamespace(), owner.obj.GetName())
		}
	}
}

// sourceObject is the snapshot's Ingress or Gateway API route that ref names, with its kind.
func (b *builder) sourceObject(ref kongstate.ObjectRef) (client.Object, schema.GroupVersionKind) {
	find := func(objs []client.Object, gvk schema.GroupVersionKind) (client.Object, schema.GroupVersionKind) {
		for _, o := range objs {
			if o.GetNamespace() == ref.Namespace && o.GetName() == ref.Name {
				return o, gvk
			}
		}
		return nil, schema.GroupVersionKind{}
	}
	switch ref.Kind {
	case gvkIngress.Kind:
		return find(objects(b.snap.Ingresses), gvkIngress)
	case gvkHTTPRoute.Kind:
		return find(objects(b.snap.HTTPRoutes), gvkHTTPRoute)
	case gvkGRPCRoute.Kind:
		return find(objects(b.snap.GRPCRoutes), gvkGRPCRoute)
	}
	return nil, schema.GroupVersionKind{}
}
