package store

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PayloadNotCachedAnnotation marks a Secret the cache keeps without its data: nothing the
// translation reads referred to it when it was cached (SecretPayloads). It exists only in
// konductor's memory, never on the API server.
const PayloadNotCachedAnnotation = "konductor.internal/payload-not-cached"

// SecretPayloads keeps the data of Secrets out of the cache unless translation may read it
// (issue #13, memory; KIC #6576: a cluster's unrelated Secrets, Helm's and others, can be
// hundreds of megabytes). Its Transform, the cache's, keeps the data of a Secret when:
//   - a Kong label marks it (konghq.com/credential, konghq.com/ca-cert, ...: any label of
//     the konghq.com/ prefix), or it is a kubernetes.io/tls Secret (small, and what Ingress
//     and Gateway TLS refer to);
//   - or the latest translation refers to it (SetReferenced);
//
// and otherwise keeps its metadata only, marked with PayloadNotCachedAnnotation. A Secret
// that becomes referenced after it was cached so is read from the API server (Complete,
// through a reader that does not use the cache) into a side cache keyed by namespace and
// name, valid for that UID and resourceVersion; its next informer event caches it whole,
// since it is referenced then. A snapshot (Source) never shows a Secret without its data:
// it shows the side cache's copy, or leaves the Secret out (Snapshot.SecretsPending) until
// it is loaded, so an empty Secret is never taken for real credentials or certificates.
type SecretPayloads struct {
	reader     client.Reader // uncached: the manager's APIReader
	referenced atomic.Pointer[func(namespace, name string) bool]

	mu     sync.Mutex
	loaded map[types.NamespacedName]*corev1.Secret
	// loadedSince are the Secrets loaded since the last fill: a snapshot that follows the
	// previous one (Snapshot.Changes) shows them changed, though no event came of it.
	loadedSince map[types.NamespacedName]struct{}
}

// NewSecretPayloads returns the keeper; reader reads the API server, not the cache. Until
// SetReferenced is called no Secret counts as referenced.
func NewSecretPayloads(reader client.Reader) *SecretPayloads {
	return &SecretPayloads{reader: reader, loaded: map[types.NamespacedName]*corev1.Secret{}, loadedSince: map[types.NamespacedName]struct{}{}}
}

// SetReader sets the uncached reader (the manager's APIReader exists only after the cache
// options, which carry Transform, were given).
func (p *SecretPayloads) SetReader(r client.Reader) { p.reader = r }

// SetReferenced records which Secrets the latest translation refers to.
func (p *SecretPayloads) SetReferenced(referenced func(namespace, name string) bool) {
	p.referenced.Store(&referenced)
}

// Transform is the cache transform: StripForCache, and a Secret's data dropped as above.
func (p *SecretPayloads) Transform(in any) (any, error) {
	out, err := StripForCache(in)
	if err != nil {
		return out, err
	}
	secret, ok := out.(*corev1.Secret)
	if !ok || p.keepPayload(secret) || (len(secret.Data) == 0 && len(secret.StringData) == 0) {
		return out, nil
	}
	secret.Data, secret.StringData = nil, nil
	ann := secret.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[PayloadNotCachedAnnotation] = "true"
	secret.SetAnnotations(ann)
	return out, nil
}

func (p *SecretPayloads) keepPayload(s *corev1.Secret) bool {
	if s.Type == corev1.SecretTypeTLS {
		return true
	}
	for k := range s.Labels {
		if strings.HasPrefix(k, "konghq.com/") {
			return true
		}
	}
	if ref := p.referenced.Load(); ref != nil && (*ref)(s.Namespace, s.Name) {
		return true
	}
	return false
}

// PayloadNotCached reports whether the cache holds s without its data.
func PayloadNotCached(s *corev1.Secret) bool {
	return s.Annotations[PayloadNotCachedAnnotation] == "true"
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
// every kind only). A snapshot without Secrets leaves the loaded copies alone: fill forgets
// those of Secrets it does not see.
func (s payloadSource) SnapshotOf(ctx context.Context, read KindSet) (*Snapshot, error) {
	snap, err := SnapshotOf(ctx, s.inner, read)
	if err != nil {
		return nil, err
	}
	if read == nil || read.Has(KindSecret) {
		s.p.fill(snap)
	} else {
		// Not asked for, and not filled: never shown without their data.
		snap.Secrets, snap.SecretsPending = nil, nil
	}
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

// fill replaces the payload-less Secrets of snap with their loaded copies, or moves them to
// SecretsPending; loaded copies of Secrets no longer cached so are forgotten. When snap's
// Changes follow Secrets (a Follower's, of the cache's objects), they are made to say what
// the filled Secrets are: each changed one as shown (its loaded copy, or gone while
// pending), and those loaded since the last fill changed too (no event came of a load).
func (p *SecretPayloads) fill(snap *Snapshot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var changed map[types.NamespacedName]client.Object // the filled Secrets' changes
	if snap.Changes.Followed(KindSecret) {
		cached := snap.Changes.Of(KindSecret)
		changed = make(map[types.NamespacedName]client.Object, len(cached)+len(p.loadedSince))
		for key := range cached {
			changed[key] = nil // shown below, unless pending or gone
		}
		for key := range p.loadedSince {
			changed[key] = nil
		}
	}
	clear(p.loadedSince)
	keep := make(map[types.NamespacedName]bool, len(p.loaded))
	secrets := make([]*corev1.Secret, 0, len(snap.Secrets))
	for _, s := range snap.Secrets {
		shown := s
		if PayloadNotCached(s) {
			shown = nil
			key := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
			if l := p.loaded[key]; l != nil && l.UID == s.UID && l.ResourceVersion == s.ResourceVersion {
				shown = l
				keep[key] = true
			} else {
				snap.SecretsPending = append(snap.SecretsPending, s)
			}
		}
		if shown == nil {
			continue
		}
		secrets = append(secrets, shown)
		if changed != nil {
			key := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
			if _, listed := changed[key]; listed {
				changed[key] = shown
			}
		}
	}
	for key := range p.loaded {
		if !keep[key] {
			delete(p.loaded, key)
		}
	}
	snap.Secrets = secrets
	if changed != nil {
		snap.Changes = snap.Changes.with(KindSecret, changed)
	}
}

// listThreshold: above this many Secrets to load, one paged list of the namespaces'
// Secrets costs fewer requests than a GET each.
const listThreshold = 20

// Complete loads the pending Secrets of snap that referenced says translation refers to and
// returns a snapshot that shows them (a shallow copy of snap), or nil when none of them is
// referenced. A Secret that no longer exists, or changed since it was cached (another
// version: its informer event brings it, whole, since it is referenced), stays pending.
func (p *SecretPayloads) Complete(ctx context.Context, snap *Snapshot, referenced func(namespace, name string) bool) (*Snapshot, error) {
	want := map[types.NamespacedName]*corev1.Secret{}
	for _, s := range snap.SecretsPending {
		if referenced(s.Namespace, s.Name) {
			want[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}] = s
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	// A Secret loaded already at this version (the round's snapshot completed again, for a
	// fallback translation) is not read again.
	got := make(map[types.NamespacedName]*corev1.Secret, len(want))
	p.mu.Lock()
	for key, s := range want {
		if l := p.loaded[key]; l != nil && l.UID == s.UID && l.ResourceVersion == s.ResourceVersion {
			got[key] = l
			delete(want, key)
		}
	}
	p.mu.Unlock()
	if len(want) > 0 {
		if p.reader == nil {
			return nil, fmt.Errorf("loading %d referenced Secrets: no API reader", len(want))
		}
		read, err := p.load(ctx, want)
		if err != nil {
			return nil, err
		}
		maps.Copy(got, read)
	}
	out := *snap
	out.Secrets = append(make([]*corev1.Secret, 0, len(snap.Secrets)+len(got)), snap.Secrets...)
	out.SecretsPending = nil
	// The loaded Secrets are shown changed, as the next fill shows them.
	var changed map[types.NamespacedName]client.Object
	if snap.Changes.Followed(KindSecret) {
		changed = maps.Clone(snap.Changes.Of(KindSecret))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range snap.SecretsPending {
		key := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
		if l := got[key]; l != nil && l.UID == s.UID && l.ResourceVersion == s.ResourceVersion {
			p.loaded[key] = l
			p.loadedSince[key] = struct{}{}
			out.Secrets = append(out.Secrets, l)
			if changed != nil {
				changed[key] = l
			}
			continue
		}
		out.SecretsPending = append(out.SecretsPending, s)
	}
	if changed != nil {
		out.Changes = snap.Changes.with(KindSecret, changed)
	}
	return &out, nil
}

// load reads the wanted Secrets from the API server: a GET each, or, for many, a paged list
// per namespace that keeps only them.
func (p *SecretPayloads) load(ctx context.Context, want map[types.NamespacedName]*corev1.Secret) (map[types.NamespacedName]*corev1.Secret, error) {
	got := make(map[types.NamespacedName]*corev1.Secret, len(want))
	if len(want) <= listThreshold {
		for key := range want {
			var s corev1.Secret
			switch err := p.reader.Get(ctx, key, &s); {
			case apierrors.IsNotFound(err):
			case err != nil:
				return nil, fmt.Errorf("reading Secret %s: %w", key, err)
			default:
				stripped, _ := StripForCache(&s)
				got[key] = stripped.(*corev1.Secret)
			}
		}
		return got, nil
	}
	namespaces := map[string]bool{}
	for key := range want {
		namespaces[key.Namespace] = true
	}
	for ns := range namespaces {
		opts := []client.ListOption{client.InNamespace(ns), client.Limit(100)}
		for {
			var list corev1.SecretList
			if err := p.reader.List(ctx, &list, opts...); err != nil {
				return nil, fmt.Errorf("listing the Secrets of %s: %w", ns, err)
			}
			for i := range list.Items {
				s := &list.Items[i]
				key := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
				if want[key] != nil {
					c := *s // not a pointer into the page, which holds every Secret listed
					stripped, _ := StripForCache(&c)
					got[key] = stripped.(*corev1.Secret)
				}
			}
			if list.Continue == "" {
				break
			}
			opts = []client.ListOption{client.InNamespace(ns), client.Limit(100), client.Continue(list.Continue)}
		}
	}
	return got, nil
}

// Loaded reports whether s, which the cache keeps without its data, has its loaded copy at
// its version (/debug/graph).
func (p *SecretPayloads) Loaded(s *corev1.Secret) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.loaded[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}]
	return l != nil && l.UID == s.UID && l.ResourceVersion == s.ResourceVersion
}
