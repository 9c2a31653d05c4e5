package manager

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// readsRecord is which translation last read each object, for /debug/graph: a translation
// of a whole snapshot (the first, one Incremental does whole, a kind listed anew) reads every
// object (of the kind); one that follows the previous snapshot reads the objects that
// changed (Snapshot.Changes). A change that never shows here never reached a translation.
type readsRecord struct {
	mu           sync.Mutex
	translations uint64
	lastFull     uint64
	kindFull     map[store.Kind]uint64
	changed      map[objectKey]uint64
}

type objectKey struct {
	kind store.Kind
	key  types.NamespacedName
}

func newReadsRecord() *readsRecord {
	return &readsRecord{kindFull: map[store.Kind]uint64{}, changed: map[objectKey]uint64{}}
}

// note records a translation of s; full: it translated everything.
func (r *readsRecord) note(s *store.Snapshot, full bool) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.translations++
	if full || s.Changes == nil {
		// Everything was read: what is older is superseded.
		r.lastFull = r.translations
		clear(r.kindFull)
		clear(r.changed)
		return
	}
	for _, k := range store.AllKinds() {
		if !s.Changes.Followed(k) {
			r.kindFull[k] = r.translations
			continue
		}
		for key := range s.Changes.Of(k) {
			r.changed[objectKey{k, key}] = r.translations
		}
	}
}

// lastRead is the last translation that read the object key of kind k (0: none yet), and how
// many there were.
func (r *readsRecord) lastRead(k store.Kind, key types.NamespacedName) (last, translations uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return max(r.lastFull, r.kindFull[k], r.changed[objectKey{k, key}]), r.translations
}

// graphAnswer is /debug/graph's answer for one object.
type graphAnswer struct {
	Object string `json:"object"`
	// Cached: the cache holds it (the store reads it); false when it does not exist, is not
	// in a watched namespace, or its kind is not read.
	Cached bool `json:"cached"`
	// Translated: whether a translation ran; the graph fields below are the latest one's.
	Translated bool `json:"translated"`
	// ReferredBy are the objects that refer to it: a change of it wakes a round when there
	// is one (translator.Relevance), besides the kinds served by class or label.
	ReferredBy []string `json:"referredBy"`
	// RefersTo are the objects it refers to.
	RefersTo []string `json:"refersTo"`
	// Payload is, for a Secret, whether its data is there to translate (store.SecretPayloads).
	Payload string `json:"payload,omitempty"`
	// LastReadByTranslation is the last translation since start that read it (a whole one, or
	// one of its changes); 0 for none. Translations counts them.
	LastReadByTranslation uint64 `json:"lastReadByTranslation"`
	Translations          uint64 `json:"translations"`
}

// graphDebugger answers /debug/graph from the cache, the latest translation's graph, the
// Secrets' payloads and the record of reads.
type graphDebugger struct {
	cache     client.Reader
	versions  store.Versions
	relevance *translator.Relevance
	payloads  *store.SecretPayloads
	reads     *readsRecord
}

func (d graphDebugger) answer(r *http.Request, kindName, namespace, name string) (any, error) {
	kind, ok := store.KindNamed(kindName)
	if !ok {
		var known []string
		for _, k := range store.AllKinds() {
			known = append(known, k.String())
		}
		return nil, fmt.Errorf("kind %q: not a kind konductor reads (%s)", kindName, strings.Join(known, ", "))
	}
	key := types.NamespacedName{Namespace: namespace, Name: name}
	ref := kongstate.ObjectRef{Group: kind.GroupVersionKind().Group, Kind: kind.String(), Namespace: namespace, Name: name}
	out := graphAnswer{Object: ref.String(), ReferredBy: []string{}, RefersTo: []string{}}
	obj := d.versions.NewObject(kind)
	switch err := d.cache.Get(r.Context(), key, obj); {
	case err == nil:
		out.Cached = true
	case apierrors.IsNotFound(err):
	default:
		return nil, fmt.Errorf("reading %s from the cache: %w", ref, err)
	}
	if g := d.relevance.Graph(); g != nil {
		out.Translated = true
		n := objgraph.NodeOf(ref)
		out.ReferredBy = nodeNames(g.RdepsOf(n))
		out.RefersTo = nodeNames(g.DepsOf(n))
	}
	if secret, ok := obj.(*corev1.Secret); ok && out.Cached {
		out.Payload = d.payloadOf(secret, len(out.ReferredBy) > 0)
	}
	out.LastReadByTranslation, out.Translations = d.reads.lastRead(kind, key)
	return out, nil
}

// payloadOf says whether the Secret's data is there for translation; referred: the latest
// translation refers to it.
func (d graphDebugger) payloadOf(s *corev1.Secret, referred bool) string {
	switch {
	case !store.PayloadNotCached(s):
		return "cached"
	case d.payloads.Loaded(s):
		return "loaded: the cache keeps it without its data, read whole from the API server when the translation came to refer to it"
	case referred:
		return "held: referred to, but the cache keeps it without its data and no copy of this version is loaded; it counts as missing until its next event brings it whole"
	default:
		return "not cached: nothing referred to it when it was cached, so the cache keeps it without its data; a round reads it whole once the translation refers to it"
	}
}

func nodeNames(s *objgraph.Set) []string {
	out := []string{}
	for n := range s.All() {
		if !n.Shared() {
			out = append(out, n.String())
		}
	}
	slices.Sort(out)
	return out
}
