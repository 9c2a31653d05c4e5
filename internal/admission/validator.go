package admission

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/redact"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// SnapshotSource is the cache as the translator sees it (the store).
type SnapshotSource interface {
	Snapshot(ctx context.Context) (*store.Snapshot, error)
}

// Options are what the validator reads and how it translates.
type Options struct {
	// Source is the store over the manager's cache.
	Source SnapshotSource
	// Namespaces are the watched namespaces (--watch-namespace); empty: all. Objects elsewhere
	// are not konductor's and are allowed untouched.
	Namespaces []string
	// Synced reports whether every informer the store reads has synced. Until it does, every
	// review is allowed with a warning: an unsynced cache cannot tell what a change breaks.
	Synced func() bool
	// TranslatorOptions are the sync loop's translation settings at time now.
	TranslatorOptions func(now time.Time) translator.Options
	// Gateways checks plugins whose schema konductor does not know; nil: none.
	Gateways GatewaySchemas
	// Now is the clock (time.Now); tests set it.
	Now    func() time.Time
	Logger logr.Logger
	// MaxConcurrentReviews bounds the reviews translating at once (DefaultMaxConcurrentReviews
	// when 0): each translates the cache, which costs memory in proportion to it, and
	// anyone who can reach the webhook can send reviews (docs/security.md, item 4).
	MaxConcurrentReviews int
	// BusyWait is how long a review waits for a turn before it is allowed with a warning
	// (DefaultBusyWait when 0): the API server's call has a deadline of its own.
	BusyWait time.Duration
	// MaxCachedScopes and MaxCachedBytes bound the translations kept between reviews
	// (DefaultMaxCachedScopes, DefaultMaxCachedBytes when 0).
	MaxCachedScopes int
	MaxCachedBytes  int64
}

// Defaults of Options.
const (
	DefaultMaxConcurrentReviews = 2
	DefaultBusyWait             = 3 * time.Second
)

// Warnings given when a review cannot be decided.
const (
	warnNotSynced = "konductor has not finished reading the cluster yet; this object was not checked"
	warnNoCache   = "konductor could not read its cache (%v); this object was not checked"
	warnBusy      = "konductor's webhook is busy with other reviews; this object was not checked (its problems, if any, are reported as Events once it is stored)"
)

// Validator decides admission reviews. It is safe for concurrent use.
type Validator struct {
	opts Options

	// The translation of the cache as it is, reused by every review until the cache changes
	// (generation counts informer events): a review then costs one translation, not two.
	generation atomic.Uint64
	mu         sync.Mutex
	current    *cacheTranslations
	// turns holds a token per review translating (MaxConcurrentReviews).
	turns chan struct{}
}

// cacheTranslations are the translations of one snapshot of the cache, by review scope.
type cacheTranslations struct {
	generation uint64
	snap       *store.Snapshot
	opts       translator.Options
	byScope    *scopeCache
}

// translation is a snapshot (reduced to a review scope) translated, with the settings used.
type translation struct {
	snap   *store.Snapshot
	opts   translator.Options
	result translator.Result
}

// NewValidator returns a validator over opts.Source.
func NewValidator(opts Options) *Validator {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Synced == nil {
		opts.Synced = func() bool { return true }
	}
	if opts.TranslatorOptions == nil {
		opts.TranslatorOptions = func(now time.Time) translator.Options { return translator.Options{Now: now} }
	}
	if opts.MaxConcurrentReviews <= 0 {
		opts.MaxConcurrentReviews = DefaultMaxConcurrentReviews
	}
	if opts.BusyWait <= 0 {
		opts.BusyWait = DefaultBusyWait
	}
	if opts.MaxCachedScopes <= 0 {
		opts.MaxCachedScopes = DefaultMaxCachedScopes
	}
	if opts.MaxCachedBytes <= 0 {
		opts.MaxCachedBytes = DefaultMaxCachedBytes
	}
	return &Validator{opts: opts, turns: make(chan struct{}, opts.MaxConcurrentReviews)}
}

// turn waits for one of the review turns, at most BusyWait; release gives it back. ok is
// false when none came.
func (v *Validator) turn(ctx context.Context) (release func(), ok bool) {
	timer := time.NewTimer(v.opts.BusyWait)
	defer timer.Stop()
	select {
	case v.turns <- struct{}{}:
		return func() { <-v.turns }, true
	case <-timer.C:
		return nil, false
	case <-ctx.Done():
		return nil, false
	}
}

// EventHandler is to be added to every informer the store reads: any event makes the next
// review read the cache again.
func (v *Validator) EventHandler() toolscache.ResourceEventHandler {
	bump := func() { v.generation.Add(1) }
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { bump() },
		UpdateFunc: func(any, any) { bump() },
		DeleteFunc: func(any) { bump() },
	}
}

// Review decides one admission request. It never fails: what cannot be decided is allowed,
// with a warning saying why.
func (v *Validator) Review(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return resp
	}
	kind, ok := kindOf(req.Resource)
	if !ok {
		return resp
	}
	obj, err := decode(kind, req.Object.Raw)
	if err != nil {
		resp.Warnings = []string{fmt.Sprintf("konductor could not read this object (%v); it was not checked", err)}
		return resp
	}
	completeMetadata(obj, req, v.opts.Now())
	resp.Warnings = deprecations(obj)
	if !v.watched(obj.GetNamespace()) {
		return resp
	}
	if !v.opts.Synced() {
		resp.Warnings = append(resp.Warnings, warnNotSynced)
		return resp
	}
	release, ok := v.turn(ctx)
	if !ok {
		resp.Warnings = append(resp.Warnings, warnBusy)
		return resp
	}
	defer release()
	before, err := v.translation(ctx, scopeOf(kind, obj))
	if err != nil {
		resp.Warnings = append(resp.Warnings, fmt.Sprintf(warnNoCache, err))
		return resp
	}
	if !classed(before.snap, obj) {
		return resp
	}
	refused, warnings := v.judge(ctx, before, kind, obj)
	resp.Warnings = append(resp.Warnings, warnings...)
	if len(refused) > 0 {
		resp.Allowed = false
		resp.Result = &metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonInvalid, Code: 422,
			Message: strings.Join(refused, "; ")}
	}
	return resp
}

// judge returns what the change of obj breaks that was not broken before, and warnings.
func (v *Validator) judge(ctx context.Context, before *translation, kind store.Kind, obj client.Object) (refused, warnings []string) {
	afterSnap := withObject(before.snap, obj)
	after := translator.Build(afterSnap, before.opts)

	self := refOf(kind, obj)
	scope := map[kongstate.ObjectRef]bool{}
	for _, g := range []*objgraph.Graph{before.result.Graph, after.Graph} {
		for _, r := range g.Dependents(self) {
			scope[r] = true
		}
	}
	// Plugin configurations first: their messages are KIC's ("failed schema validation").
	schemaChecked := map[kongstate.ObjectRef]bool{}
	var plugins []client.Object
	switch kind {
	case store.KindKongPlugin, store.KindKongClusterPlugin:
		plugins = []client.Object{obj}
	case store.KindSecret:
		plugins = pluginsReading(afterSnap, obj.GetNamespace(), obj.GetName())
	}
	for _, p := range plugins {
		pkind := store.KindKongPlugin
		if p.GetNamespace() == "" {
			pkind = store.KindKongClusterPlugin
		}
		now := checkPlugin(ctx, afterSnap, pkind, p, v.opts.Gateways)
		if now.warning != "" {
			warnings = append(warnings, now.warning)
		}
		if len(now.errors) == 0 || now.awaiting {
			warnings = append(warnings, now.errors...)
			continue
		}
		// Only what the change breaks: the same plugin as stored, with the Secrets as stored.
		var was pluginVerdict
		if stored := storedPlugin(before.snap, p); stored != nil {
			was = checkPlugin(ctx, before.snap, pkind, stored, v.opts.Gateways)
		}
		schemaChecked[objgraph.Key(kongstate.RefFor(p, pkind.GroupVersionKind()))] = true
		for _, e := range now.errors {
			if !slices.Contains(was.errors, e) && !slices.Contains(refused, e) {
				refused = append(refused, e)
			}
		}
	}
	known := map[problemKey]bool{}
	for _, p := range before.result.Problems {
		known[keyOf(p)] = true
	}
	// A namespaced object's reviewer learns nothing of other namespaces: what the change
	// breaks there is counted, not described (docs/security.md, item 4). Cluster-scoped
	// objects (KongClusterPlugin, Gateway API classes) are an administrator's.
	foreignRefused, foreignWarned := 0, 0
	foreign := func(p translator.Problem) bool {
		return obj.GetNamespace() != "" && p.Object.Namespace != "" && p.Object.Namespace != obj.GetNamespace()
	}
	defer func() {
		if foreignRefused > 0 {
			refused = append(refused, fmt.Sprintf("the change breaks %d object(s) of other namespaces that depend on it; their Events say how", foreignRefused))
		}
		if foreignWarned > 0 {
			warnings = append(warnings, fmt.Sprintf("the change affects %d object(s) of other namespaces that depend on it; their Events say how", foreignWarned))
		}
	}()
	for _, p := range after.Problems {
		if !scope[objgraph.Key(p.Object)] || known[keyOf(p)] {
			continue
		}
		if foreign(p) {
			if p.Warning || awaitsAnotherObject(p.Message) {
				foreignWarned++
			} else if !(schemaChecked[objgraph.Key(p.Object)] && strings.HasPrefix(p.Field, "config")) {
				foreignRefused++
			}
			continue
		}
		if schemaChecked[objgraph.Key(p.Object)] && strings.HasPrefix(p.Field, "config") {
			continue // the plugin check above said it, in KIC's words
		}
		if p.Warning || awaitsAnotherObject(p.Message) {
			warnings = append(warnings, p.String())
			continue
		}
		refused = append(refused, p.String())
	}

	// Every answer goes through one redaction (docs/security.md, item 3): the secrets the
	// configuration holds, the values of the Secrets the reviewed objects read, and the
	// reviewed Secret's own, wherever a message (Kong's validator's included) quotes them.
	red := reviewRedactor(after, afterSnap, obj)
	mask := func(s string) string { return red.String(s) }
	if ns := obj.GetNamespace(); ns != "" && len(refused)+len(warnings) > 0 {
		foreign := newForeignMasker(afterSnap, ns)
		mask = func(s string) string { return foreign.String(red.String(s)) }
	}
	for i := range refused {
		refused[i] = mask(refused[i])
	}
	for i := range warnings {
		warnings[i] = mask(warnings[i])
	}
	return refused, warnings
}

// reviewRedactor masks the secrets a review's messages could quote: the one redaction of
// every translation's messages (redact.ForTranslation: the configuration's credentials,
// certificate keys and secret-named plugin fields, every value of every Secret the
// translation read, in any namespace), and, when the reviewed object is a Secret, its own
// values, and those of the Secrets a reviewed plugin reads (checked whether or not anything
// names it, so translation may not have read them).
func reviewRedactor(after translator.Result, snap *store.Snapshot, obj client.Object) *redact.Redactor {
	var more []string
	if sec, ok := obj.(*corev1.Secret); ok {
		more = append(more, redact.SecretValues(sec)...)
	}
	reads := map[kongstate.ObjectRef]bool{}
	for _, k := range pluginSecrets(obj) {
		reads[objgraph.Key(kongstate.ObjectRef{Kind: "Secret", Namespace: k.Namespace, Name: k.Name})] = true
	}
	for _, sec := range snap.Secrets {
		if sec != nil && len(reads) > 0 && reads[objgraph.Key(kongstate.RefFor(sec, store.KindSecret.GroupVersionKind()))] {
			more = append(more, redact.SecretValues(sec)...)
		}
	}
	return redact.ForTranslation(after.State, after.Graph, snap.Secrets, more...)
}

type problemKey struct {
	object         kongstate.ObjectRef
	field, message string
}

func keyOf(p translator.Problem) problemKey {
	return problemKey{objgraph.Key(p.Object), p.Field, p.Message}
}

// translation returns the cache translated for a change in scope sc (forScope), reusing the
// last one when no informer event came since and the settings are the same (a router flavor
// learnt since changes them: the regexes are then checked with the other syntax). The
// generation is read before the snapshot, so a change that lands while it is translated makes
// the next review read the cache again.
func (v *Validator) translation(ctx context.Context, sc reviewScope) (*translation, error) {
	key := sc.key()
	gen := v.generation.Load()
	opts := v.opts.TranslatorOptions(v.opts.Now())
	v.mu.Lock()
	cur := v.current
	reusable := cur != nil && cur.generation == gen && sameSettings(cur.opts, opts)
	if reusable {
		if t := cur.byScope.get(key); t != nil {
			v.mu.Unlock()
			return t, nil
		}
	}
	v.mu.Unlock()

	var snap *store.Snapshot
	if reusable {
		snap, opts = cur.snap, cur.opts
	} else {
		var err error
		if snap, err = v.opts.Source.Snapshot(ctx); err != nil {
			return nil, err
		}
	}
	sc = sc.existing(snap)
	scoped := forScope(snap, sc)
	t := &translation{snap: scoped, opts: opts, result: translator.Build(scoped, opts)}
	// Only a scope of namespaces that exist is kept: the API server sends no review of an
	// object in a namespace that does not exist, so a review naming one is someone else's,
	// and is translated for itself alone.
	keep := sc.key() == key && sc.exists(snap)

	v.mu.Lock()
	defer v.mu.Unlock()
	if v.current == nil || v.current.generation < gen ||
		(v.current.generation == gen && (v.current.snap != snap || !sameSettings(v.current.opts, opts))) {
		v.current = &cacheTranslations{generation: gen, snap: snap, opts: opts,
			byScope: newScopeCache(v.opts.MaxCachedScopes, v.opts.MaxCachedBytes)}
	}
	if v.current.generation == gen && keep {
		v.current.byScope.put(key, t)
	}
	return t, nil
}

// CachedScopes lists the scopes (their namespaces, comma-separated; "" for the whole cache)
// whose translations are kept, least recently used first: what a review can make the
// validator keep (docs/security.md, item 4).
func (v *Validator) CachedScopes() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	if v.current != nil {
		for _, e := range v.current.byScope.entries {
			out = append(out, e.key)
		}
	}
	return out
}

// sameSettings reports whether a and b translate alike but for the clock: the time a kept
// translation checked CA certificates at is close enough to a review's.
func sameSettings(a, b translator.Options) bool {
	a.Now, b.Now = time.Time{}, time.Time{}
	return reflect.DeepEqual(a, b)
}

func (v *Validator) watched(ns string) bool {
	return ns == "" || len(v.opts.Namespaces) == 0 || slices.Contains(v.opts.Namespaces, ns)
}

// completeMetadata fills what a reviewed object may lack and translation relies on: its
// namespace (the request's) and, on create, its creation time, so that in the rules where
// the oldest object wins (translation-rules.md §1.1) the new object is the newest.
func completeMetadata(obj client.Object, req *admissionv1.AdmissionRequest, now time.Time) {
	if obj.GetNamespace() == "" && req.Namespace != "" {
		obj.SetNamespace(req.Namespace)
	}
	if obj.GetName() == "" {
		obj.SetName(req.Name)
	}
	if ts := obj.GetCreationTimestamp(); ts.IsZero() {
		obj.SetCreationTimestamp(metav1.NewTime(now))
	}
}
