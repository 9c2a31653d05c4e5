package translator

import (
	"slices"

	"github.com/kong/go-database-reconciler/pkg/file"
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
			ref, ok := tagsObject(r.Tags)
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

// ConsumerScopeNamespace is Options.ConsumerScope's value that admits a consumer only on the
// routes of its own namespace (--consumer-scope=namespace).
const ConsumerScopeNamespace = "namespace"

// namespaceGroupPrefix starts the ACL group every consumer is given under
// --consumer-scope=namespace: "konductor-namespace:<its namespace>".
const namespaceGroupPrefix = "konductor-namespace:"

// consumerAuthPlugins are Kong's plugins that identify a consumer.
var consumerAuthPlugins = map[string]bool{"key-auth": true, "key-auth-enc": true, "basic-auth": true, "jwt": true, "hmac-auth": true,
	"oauth2": true, "ldap-auth": true, "ldap-auth-advanced": true, "mtls-auth": true, "openid-connect": true}

// scopeConsumers admits, with --consumer-scope=namespace, a consumer only on the routes of its
// own namespace. Kong's authentication plugins accept every consumer; its acl plugin is the
// stock way to narrow that. So every consumer gets the ACL group "konductor-namespace:<ns>",
// and a copy "<ns>:<group>" of each ACL group it has; every route an authentication plugin
// guards (its own, its service's or a global one) gets an acl plugin allowing its namespace's
// group, or, when it or its service has an acl plugin of its own, that plugin's allow list
// becomes "<ns>:<group>" of the route's namespace. An acl plugin with a deny list (Kong takes
// allow or deny, not both) cannot be narrowed: its object is left out, fail closed.
func (b *builder) scopeConsumers() {
	for i, c := range b.state.Consumers {
		ns := b.consumerObjs[i].Namespace
		groups := []*kong.ACLGroup{{Group: kong.String(namespaceGroupPrefix + ns), Tags: c.Tags}}
		for _, g := range c.ACLGroups {
			groups = append(groups, &kong.ACLGroup{Group: kong.String(ns + ":" + kong.StringValue(g.Group)), Tags: g.Tags})
		}
		c.ACLGroups = append(c.ACLGroups, groups...)
	}
	authRoutes, authServices, globalAuth := map[string]bool{}, map[string]bool{}, false
	aclRoutes, aclServices := map[string]*file.FPlugin{}, map[string]*file.FPlugin{}
	for _, p := range b.state.Plugins {
		if p.Consumer != nil || p.ConsumerGroup != nil {
			continue // of some consumers only: no guard
		}
		route, service := "", ""
		if p.Route != nil {
			route = kong.StringValue(p.Route.ID)
		}
		if p.Service != nil {
			service = kong.StringValue(p.Service.ID)
		}
		switch name := kong.StringValue(p.Name); {
		case consumerAuthPlugins[name] && route != "":
			authRoutes[route] = true
		case consumerAuthPlugins[name] && service != "":
			authServices[service] = true
		case consumerAuthPlugins[name]:
			globalAuth = true
		case name == "acl" && route != "":
			aclRoutes[route] = p
		case name == "acl" && service != "":
			aclServices[service] = p
		}
	}
	scoped := map[*file.FPlugin]bool{}
	for _, n := range b.kongServiceNames() {
		for _, r := range b.kongServices[n].routes {
			name := kong.StringValue(r.Name)
			if !globalAuth && !authRoutes[name] && !authServices[n] {
				continue
			}
			owner, _ := tagsObject(r.Tags)
			ns := owner.Namespace
			acl := aclRoutes[name]
			if acl == nil {
				acl = aclServices[n]
			}
			if acl == nil {
				b.state.Plugins = append(b.state.Plugins, &file.FPlugin{Plugin: kong.Plugin{
					ID: kong.String(kongstate.PluginID(b.opts.Workspace, "acl", "", name, "", "")), Name: kong.String("acl"),
					Route: &kong.Route{ID: kong.String(name)}, Tags: r.Tags,
					Config: kong.Configuration{"allow": []any{namespaceGroupPrefix + ns}},
				}})
				continue
			}
			if !scoped[acl] {
				scoped[acl] = true
				b.scopeACL(acl, ns)
			}
		}
	}
}

// scopeACL makes acl's allow list the groups of namespace ns ("<ns>:<group>"), which only
// consumers of ns have; an acl plugin with a deny list is refused, with what names it.
func (b *builder) scopeACL(acl *file.FPlugin, ns string) {
	allow, _ := acl.Config["allow"].([]any)
	if len(allow) == 0 {
		if obj, gvk := b.pluginObjectOf(acl); obj != nil {
			b.problem(obj, gvk, "config.deny", "an acl plugin with a deny list cannot be narrowed to the consumers of namespace %s (--consumer-scope=namespace): use an allow list", ns)
			b.refuseBound(obj, gvk, "config.deny", "with --consumer-scope=namespace an acl plugin needs an allow list")
		}
		return
	}
	scoped := make([]any, 0, len(allow))
	for _, g := range allow {
		if s, ok := g.(string); ok {
			scoped = append(scoped, ns+":"+s)
		}
	}
	acl.Config["allow"] = scoped
}

// pluginObjectOf is the KongPlugin or KongClusterPlugin a plugin entity's tags name.
func (b *builder) pluginObjectOf(p *file.FPlugin) (client.Object, schema.GroupVersionKind) {
	ref, _ := tagsObject(p.Tags)
	switch ref.Kind {
	case gvkKongPlugin.Kind:
		if kp := b.kongPlugins[ref.Namespace+"/"+ref.Name]; kp != nil {
			return kp, gvkKongPlugin
		}
	case gvkKongClusterPlugin.Kind:
		if kcp := b.clusterPlugins[ref.Name]; kcp != nil {
			return kcp, gvkKongClusterPlugin
		}
	}
	return nil, schema.GroupVersionKind{}
}
