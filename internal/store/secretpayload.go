package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PayloadNotCachedAnnotation marks a Secret or ConfigMap the cache keeps without its data:
// nothing the translation reads referred to it when it was cached (SecretPayloads). It
// exists only in konductor's memory, never on the API server.
const PayloadNotCachedAnnotation = "konductor.internal/payload-not-cached"

// SecretPayloads keeps the data of Secrets and ConfigMaps out of the cache unless
// translation may read it (issue #13, memory; KIC #6576: a cluster's unrelated Secrets,
// Helm's and others, can be hundreds of megabytes; its ConfigMaps too). Its Transform, the
// cache's, keeps the data of a Secret when:
//   - a Kong label marks it (konghq.com/credential, konghq.com/ca-cert, ...: any label of
//     the konghq.com/ prefix), or it is a kubernetes.io/tls Secret (small, and what Ingress
//     and Gateway TLS refer to);
//   - or the latest translation refers to it (SetReferenced);
//
// of a ConfigMap when it carries the CA-certificate labels (SetConfigMapLabels: KIC's, the
// only ConfigMaps KIC reads) or the latest translation's BackendTLSPolicies name it (issue
// #40: a Gateway API user does not label a policy's CA ConfigMap);
//
// and otherwise keeps its metadata only, marked with PayloadNotCachedAnnotation. An object
// that becomes referenced after it was cached so is read from the API server (Complete,
// through a reader that does not use the cache) into a side cache keyed by kind, namespace
// and name, valid for that UID and resourceVersion; its next informer event caches it whole,
// since it is referenced then. A snapshot (Source) never shows one without its data: it
// shows the side cache's copy, or leaves it out (Snapshot.SecretsPending,
// ConfigMapsPending) until it is loaded, so an empty Secret is never taken for real
// credentials or certificates.
type SecretPayloads struct {
	reader     client.Reader // uncached: the manager's APIReader
	referenced atomic.Pointer[Referenced]
	// configMapLabels are the labels (value "true") that make a ConfigMap's data kept.
	configMapLabels atomic.Pointer[[]string]

	mu     sync.Mutex
	loaded map[payloadKey]client.Object
	// loadedSince are the objects loaded since the last fill: a snapshot that follows the
	// previous one (Snapshot.Changes) shows them changed, though no event came of it.
	loadedSince map[payloadKey]struct{}
}

// Referenced tells whether translation refers to the object of kind k (KindSecret or
// KindConfigMap) namespace/name, so that its data must be kept.
type Referenced func(k Kind, namespace, name string) bool

// payloadKey names an object whose payload may be dropped.
type payloadKey struct {
	kind Kind
	types.NamespacedName
}

func keyOf(k Kind, obj client.Object) payloadKey {
	return payloadKey{k, types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
}

// NewSecretPayloads returns the keeper; reader reads the API server, not the cache. Until
// SetReferenced is called nothing counts as referenced; until SetConfigMapLabels, a
// ConfigMap labelled konghq.com/ca-cert: "true" keeps its data.
func NewSecretPayloads(reader client.Reader) *SecretPayloads {
	p := &SecretPayloads{reader: reader, loaded: map[payloadKey]client.Object{}, loadedSince: map[payloadKey]struct{}{}}
	p.SetConfigMapLabels(CACertLabel)
	return p
}

// SetReader sets the uncached reader (the manager's APIReader exists only after the cache
// options, which carry Transform, were given).
func (p *SecretPayloads) SetReader(r client.Reader) { p.reader = r }

// SetReferenced records which objects the latest translation refers to.
func (p *SecretPayloads) SetReferenced(referenced Referenced) {
	p.referenced.Store(&referenced)
}

// SetConfigMapLabels sets the labels, each with the value "true", that make a ConfigMap's
// data kept (konghq.com/ca-cert and --configmap-label-selector, which limited the
// ConfigMaps' informer before issue #40).
func (p *SecretPayloads) SetConfigMapLabels(keys ...string) {
	keys = slices.Clone(keys)
	p.configMapLabels.Store(&keys)
}

// Transform is the cache transform: StripForCache, and a Secret's or ConfigMap's data
// dropped as above.
func (p *SecretPayloads) Transform(in any) (any, error) {
	out, err := StripForCache(in)
	if err != nil {
		return out, err
	}
	switch o := out.(type) {
	case *corev1.Secret:
		if p.keepSecret(o) || (len(o.Data) == 0 && len(o.StringData) == 0) {
			return out, nil
		}
		o.Data, o.StringData = nil, nil
	case *corev1.ConfigMap:
		if p.keepConfigMap(o) || (len(o.Data) == 0 && len(o.BinaryData) == 0) {
			return out, nil
		}
		o.Data, o.BinaryData = nil, nil
	default:
		return out, nil
	}
	obj := out.(client.Object)
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[PayloadNotCachedAnnotation] = "true"
	obj.SetAnnotations(ann)
	return out, nil
}

func (p *SecretPayloads) keepSecret(s *corev1.Secret) bool {
	if s.Type == corev1.SecretTypeTLS {
		return true
	}
	for k := range s.Labels {
		if strings.HasPrefix(k, "konghq.com/") {
			return true
		}
	}
	return p.isReferenced(KindSecret, s)
}

func (p *SecretPayloads) keepConfigMap(c *corev1.ConfigMap) bool {
	labelled := true
	for _, k := range *p.configMapLabels.Load() {
		labelled = labelled && c.Labels[k] == "true"
	}
	return labelled || p.isReferenced(KindConfigMap, c)
}

func (p *SecretPayloads) isReferenced(k Kind, obj client.Object) bool {
	ref := p.referenced.Load()
	return ref != nil && (*ref)(k, obj.GetNamespace(), obj.GetName())
}

// PayloadNotCached reports whether the cache holds obj (a Secret or ConfigMap) without its
// data.
func PayloadNotCached(obj client.Object) bool {
	return obj.GetAnnotations()[PayloadNotCachedAnnotation] == "true"
}

// SnapshotSource is what Source wraps: a Store, in the controller.
type SnapshotSource interface {
	Snapshot(ctx context.Context) (*Snapshot, error)
}

// Source returns inner's snapshots with every Secret cached without its data replaced by
// its loaded copy, or moved to Snapshot.SecretsPending when none is loaded for that version.
func (p *SecretPayloads) Source(inner SnapshotSource) SnapshotSource { return payloadSource{p, inner} }

type payloadSource struct {
	p     *SecretPayloads
	inner SnapshotSource
}

func (s payloadSource) Snapshot(ctx context.Context) (*Snapshot, error) {
	return s.SnapshotOf(ctx, nil)
}

// SnapshotOf is Store.SnapshotOf through the payloads (inner's Snapshot when inner lists
// every kind only). A snapshot without Secrets (ConfigMaps) leaves their loaded copies
// alone: fill forgets those of the objects it does not see, of the kinds read.
func (s payloadSource) SnapshotOf(ctx context.Context, read KindSet) (*Snapshot, error) {
	snap, err := SnapshotOf(ctx, s.inner, read)
	if err != nil {
		return nil, err
	}
	s.p.fill(snap, read)
	return snap, nil
}

// SnapshotOf is source's SnapshotOf(ctx, read) when it has one, else its whole Snapshot.
func SnapshotOf(ctx context.Context, source SnapshotSource, read KindSet) (*Snapshot, error) {
	if partial, ok := source.(interface {
		SnapshotOf(ctx context.Context, read KindSet) (*Snapshot, error)
	}); ok {
		return partial.SnapshotOf(ctx, read)
	}
	return source.Snapshot(ctx)
}

// payloadKinds are the kinds whose payloads SecretPayloads may drop, with their snapshot
// fields.
var payloadKinds = []struct {
	kind    Kind
	shown   func(*Snapshot) *[]client.Object
	setBack func(s *Snapshot, shown, pending []client.Object)
	pending func(*Snapshot) []client.Object
}{
	{KindSecret,
		func(s *Snapshot) *[]client.Object { o := objects(s.Secrets); return &o },
		func(s *Snapshot, shown, pending []client.Object) {
			s.Secrets, s.SecretsPending = typed[*corev1.Secret](shown), typed[*corev1.Secret](pending)
		},
		func(s *Snapshot) []client.Object { return objects(s.SecretsPending) }},
	{KindConfigMap,
		func(s *Snapshot) *[]client.Object { o := objects(s.ConfigMaps); return &o },
		func(s *Snapshot, shown, pending []client.Object) {
			s.ConfigMaps, s.ConfigMapsPending = typed[*corev1.ConfigMap](shown), typed[*corev1.ConfigMap](pending)
		},
		func(s *Snapshot) []client.Object { return objects(s.ConfigMapsPending) }},
}

func objects[T client.Object](in []T) []client.Object {
	out := make([]client.Object, len(in))
	for i, o := range in {
		out[i] = o
	}
	return out
}

func typed[T client.Object](in []client.Object) []T {
	if in == nil {
		return nil
	}
	out := make([]T, len(in))
	for i, o := range in {
		out[i] = o.(T)
	}
	return out
}

// fill replaces the payload-less Secrets and ConfigMaps of snap with their loaded copies,
// or moves them to the pending lists; loaded copies of objects no longer cached so are
// forgotten. When snap's Changes follow the kind (a Follower's, of the cache's objects),
// they are made to say what the filled objects are: each changed one as shown (its loaded
// copy, or gone while pending), and those loaded since the last fill changed too (no event
// came of a load).
func (p *SecretPayloads) fill(snap *Snapshot, read KindSet) {
	p.mu.Lock()
	defer p.mu.Unlock()
	keep := make(map[payloadKey]bool, len(p.loaded))
	filled := map[Kind]bool{}
	for _, pk := range payloadKinds {
		if read != nil && !read.Has(pk.kind) {
			// Not asked for, and not filled: never shown without their data.
			pk.setBack(snap, nil, nil)
			continue
		}
		filled[pk.kind] = true
		var changed map[types.NamespacedName]client.Object // the filled objects' changes
		if snap.Changes.Followed(pk.kind) {
			cached := snap.Changes.Of(pk.kind)
			changed = make(map[types.NamespacedName]client.Object, len(cached)+len(p.loadedSince))
			for key := range cached {
				changed[key] = nil // shown below, unless pending or gone
			}
			for key := range p.loadedSince {
				if key.kind == pk.kind {
					changed[key.NamespacedName] = nil
				}
			}
		}
		all := *pk.shown(snap)
		shownList := make([]client.Object, 0, len(all))
		pending := pk.pending(snap)
		for _, o := range all {
			shown := o
			key := keyOf(pk.kind, o)
			if PayloadNotCached(o) {
				shown = nil
				if l := p.loaded[key]; l != nil && l.GetUID() == o.GetUID() && l.GetResourceVersion() == o.GetResourceVersion() {
					shown = l
					keep[key] = true
				} else {
					pending = append(pending, o)
				}
			}
			if shown == nil {
				continue
			}
			shownList = append(shownList, shown)
			if changed != nil {
				if _, listed := changed[key.NamespacedName]; listed {
					changed[key.NamespacedName] = shown
				}
			}
		}
		pk.setBack(snap, shownList, pending)
		if changed != nil {
			snap.Changes = snap.Changes.with(pk.kind, changed)
		}
	}
	for key := range p.loadedSince {
		if filled[key.kind] {
			delete(p.loadedSince, key)
		}
	}
	for key := range p.loaded {
		if filled[key.kind] && !keep[key] {
			delete(p.loaded, key)
		}
	}
}

// listThreshold: above this many Secrets to load, one paged list of the namespaces'
// Secrets costs fewer requests than a GET each.
const listThreshold = 20

// Complete loads the pending Secrets and ConfigMaps of snap that referenced says
// translation refers to and returns a snapshot that shows them (a shallow copy of snap), or
// nil when none of them is referenced. An object that no longer exists, or changed since it
// was cached (another version: its informer event brings it, whole, since it is referenced),
// stays pending.
func (p *SecretPayloads) Complete(ctx context.Context, snap *Snapshot, referenced Referenced) (*Snapshot, error) {
	want := map[payloadKey]client.Object{}
	for _, pk := range payloadKinds {
		for _, o := range pk.pending(snap) {
			if referenced(pk.kind, o.GetNamespace(), o.GetName()) {
				want[keyOf(pk.kind, o)] = o
			}
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	// An object loaded already at this version (the round's snapshot completed again, for
	// a fallback translation) is not read again.
	got := make(map[payloadKey]client.Object, len(want))
	p.mu.Lock()
	for key, o := range want {
		if l := p.loaded[key]; l != nil && l.GetUID() == o.GetUID() && l.GetResourceVersion() == o.GetResourceVersion() {
			got[key] = l
			delete(want, key)
		}
	}
	p.mu.Unlock()
	if len(want) > 0 {
		if p.reader == nil {
			return nil, fmt.Errorf("loading %d referenced Secrets and ConfigMaps: no API reader", len(want))
		}
		read, err := p.load(ctx, want)
		if err != nil {
			return nil, err
		}
		maps.Copy(got, read)
	}
	out := *snap
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pk := range payloadKinds {
		shown := append([]client.Object(nil), *pk.shown(snap)...)
		var pending []client.Object
		// The loaded objects are shown changed, as the next fill shows them.
		var changed map[types.NamespacedName]client.Object
		if snap.Changes.Followed(pk.kind) {
			changed = maps.Clone(snap.Changes.Of(pk.kind))
		}
		for _, o := range pk.pending(snap) {
			key := keyOf(pk.kind, o)
			if l := got[key]; l != nil && l.GetUID() == o.GetUID() && l.GetResourceVersion() == o.GetResourceVersion() {
				p.loaded[key] = l
				p.loadedSince[key] = struct{}{}
				shown = append(shown, l)
				if changed != nil {
					changed[key.NamespacedName] = l
				}
				continue
			}
			pending = append(pending, o)
		}
		pk.setBack(&out, shown, pending)
		if changed != nil {
			out.Changes = out.Changes.with(pk.kind, changed)
		}
	}
	return &out, nil
}

// load reads the wanted objects from the API server: a GET each, or, for many of one
// kind, a paged list per namespace that keeps only them.
func (p *SecretPayloads) load(ctx context.Context, want map[payloadKey]client.Object) (map[payloadKey]client.Object, error) {
	got := make(map[payloadKey]client.Object, len(want))
	for _, pk := range payloadKinds {
		namespaces := map[string]bool{}
		var keys []payloadKey
		for key := range want {
			if key.kind == pk.kind {
				keys = append(keys, key)
				namespaces[key.Namespace] = true
			}
		}
		if len(keys) <= listThreshold {
			for _, key := range keys {
				o := pk.kind.NewObject()
				switch err := p.reader.Get(ctx, key.NamespacedName, o); {
				case apierrors.IsNotFound(err):
				case err != nil:
					return nil, fmt.Errorf("reading %s %s: %w", pk.kind, key.NamespacedName, err)
				default:
					stripped, _ := StripForCache(o)
					got[key] = stripped.(client.Object)
				}
			}
			continue
		}
		for ns := range namespaces {
			opts := []client.ListOption{client.InNamespace(ns), client.Limit(100)}
			for {
				list := kinds[pk.kind].newList()
				if err := p.reader.List(ctx, list, opts...); err != nil {
					return nil, fmt.Errorf("listing the %ss of %s: %w", pk.kind, ns, err)
				}
				items, err := apimeta.ExtractList(list)
				if err != nil {
					return nil, fmt.Errorf("listing the %ss of %s: %w", pk.kind, ns, err)
				}
				for _, item := range items {
					o := item.(client.Object)
					key := keyOf(pk.kind, o)
					if want[key] != nil {
						// A copy, not a pointer into the page, which holds every object listed.
						stripped, _ := StripForCache(o.DeepCopyObject())
						got[key] = stripped.(client.Object)
					}
				}
				next := list.GetContinue()
				if next == "" {
					break
				}
				opts = []client.ListOption{client.InNamespace(ns), client.Limit(100), client.Continue(next)}
			}
		}
	}
	return got, nil
}

// Loaded reports whether obj (a Secret or ConfigMap), which the cache keeps without its
// data, has its loaded copy at its version (/debug/graph).
func (p *SecretPayloads) Loaded(obj client.Object) bool { return p.LoadedCopy(obj) != nil }

// LoadedCopy is the copy of obj (a Secret or ConfigMap, which the cache keeps without its
// data) loaded at its version, or nil. Unlike a snapshot through Source it changes nothing:
// readers beside the sync loop (the Gateway API status) see what the loop's translation
// loaded without taking the loop's changes from it. The copy is shared: not to be modified.
func (p *SecretPayloads) LoadedCopy(obj client.Object) client.Object {
	k := KindSecret
	if _, ok := obj.(*corev1.ConfigMap); ok {
		k = KindConfigMap
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.loaded[keyOf(k, obj)]
	if l == nil || l.GetUID() != obj.GetUID() || l.GetResourceVersion() != obj.GetResourceVersion() {
		return nil
	}
	return l
}
