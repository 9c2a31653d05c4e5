package status

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
)

// Reasons of the Programmed condition (kubernetes-configuration's configuration/v1).
const (
	ConditionProgrammed = string(kongv1.ConditionProgrammed)
	ReasonProgrammed    = "Programmed"
	ReasonInvalid       = "Invalid"
	ReasonPending       = "Pending"
)

// ProgrammedUpdater writes the Programmed condition of Kong's resources that carry one
// (KongPlugin, KongClusterPlugin, KongConsumer, KongConsumerGroup, KongVault,
// KongCustomEntity; KongLicense in its status.controllers[] entry, license.go): True once the
// object's entities are in a configuration a gateway accepted; False, reason Invalid, with the
// field and message, when translation reported a problem on it or Kong refused its entities;
// Unknown, reason Pending, while nothing the controller serves uses it. It is a leader-only
// runnable like IngressUpdater: rounds ask it to run, it writes apart from the sync loop, and
// only where the condition differs (observedGeneration included).
type ProgrammedUpdater struct {
	runner
	statusWriter
	source dataplane.SnapshotSource
	now    func() time.Time

	// LicenseControllerName names this controller's entry in KongLicense status
	// (LicenseControllerName of the election ID); "" means KIC's type alone.
	LicenseControllerName string
	// NoLicenses leaves KongLicenses alone: with Konnect licensing the license is Konnect's
	// and KIC runs no KongLicense controller.
	NoLicenses bool

	mu      sync.Mutex
	reached *dataplane.Round // the latest round that reached a gateway, not yet taken by Update

	// Only Update's goroutine reads and writes these. unwalked is the latest round that
	// reached a gateway when its entities were not walked yet: walking them (every entity's
	// tags, tens of thousands at 10,000 Ingresses) waits until an object with a condition
	// needs the outcome, which a cluster of Ingresses alone never does.
	unwalked *dataplane.Round
	last     *outcome // of the latest round that reached a gateway, once walked
}

// outcome is what one round says of each object, keyed by objgraph.Key.
type outcome struct {
	programmed map[kongstate.ObjectRef]bool
	invalid    map[kongstate.ObjectRef]string
	// dbless is true when a DB-less gateway took the configuration: custom entities and
	// licenses reach no database-backed one (dbmode leaves them out).
	dbless bool
}

// NewProgrammedUpdater returns an updater; it writes nothing until a round reached a gateway.
func NewProgrammedUpdater(source dataplane.SnapshotSource, writer client.Client, log logr.Logger) *ProgrammedUpdater {
	u := &ProgrammedUpdater{source: source, statusWriter: statusWriter{client: writer}, now: time.Now}
	u.runner = newRunner("Kong resource status", log, u.Update)
	return u
}

// Report implements dataplane.Reporter: a round whose configuration at least one gateway
// took (whole, all but refused objects, or a fallback configuration) becomes the outcome to
// write. Report runs on the sync loop's goroutine, so it only keeps the round: Update, on the
// updater's own goroutine, walks its entities.
func (u *ProgrammedUpdater) Report(_ context.Context, r dataplane.Round) {
	if r.SnapshotErr != nil || r.State == nil || !reachedAnyGateway(r) {
		return
	}
	u.mu.Lock()
	u.reached = &r
	u.mu.Unlock()
	u.trigger.Request()
}

// reachedAnyGateway: a gateway took the round's configuration.
func reachedAnyGateway(r dataplane.Round) bool {
	return slices.ContainsFunc(r.Gateways, tookConfiguration)
}

// tookLatestConfiguration: a gateway took a configuration of r made from the latest
// translation (not a stale sync of an older one), whole, all but refused objects, or as a
// fallback configuration.
func tookLatestConfiguration(r dataplane.Round) bool {
	return slices.ContainsFunc(r.Gateways, func(g dataplane.GatewayResult) bool { return !g.Stale && tookConfiguration(g) })
}

// tookConfiguration: the gateway took the round's configuration, whole, all but refused
// objects, or as a fallback configuration.
func tookConfiguration(g dataplane.GatewayResult) bool {
	if g.Skipped {
		return false
	}
	var rej *dataplane.RejectedError
	return g.Err == nil || errors.As(g.Err, &rej) && (rej.RestApplied || g.Fallback != nil && g.Fallback.Err == nil)
}

// refusals is what the gateways of a round that refused a configuration (not skipped) say of
// the objects: the entities they refused, the objects a gateway left out itself with the
// refused ones (database mode: RejectedError.Excluded), and the objects left out of a fallback
// configuration, apart for the fallbacks a gateway took and those it did not.
type refusals struct {
	entities       []dataplane.EntityError
	isolated       []kongstate.ObjectRef
	fallbackTaken  []kongstate.ObjectRef
	fallbackFailed []kongstate.ObjectRef
}

func refusalsOf(gateways []dataplane.GatewayResult) refusals {
	var out refusals
	for _, g := range gateways {
		var rej *dataplane.RejectedError
		if g.Skipped || !errors.As(g.Err, &rej) {
			continue
		}
		out.entities = append(out.entities, rej.Entities...)
		out.isolated = append(out.isolated, rej.Excluded...)
		if fb := g.Fallback; fb != nil && fb.Err == nil {
			out.fallbackTaken = append(out.fallbackTaken, fb.Excluded...)
		} else if fb != nil {
			out.fallbackFailed = append(out.fallbackFailed, fb.Excluded...)
		}
	}
	return out
}

// outcomeOf is what a round that reached a gateway says of each object.
func outcomeOf(r dataplane.Round) *outcome {
	o := &outcome{programmed: map[kongstate.ObjectRef]bool{}, invalid: map[kongstate.ObjectRef]string{}}
	excluded := map[kongstate.ObjectRef]bool{} // left out of a fallback configuration a gateway took
	for _, g := range r.Gateways {
		if tookConfiguration(g) {
			o.dbless = o.dbless || g.Protocol == dataplane.ProtocolDBLess
		}
	}
	refused := refusalsOf(r.Gateways)
	// Conditions are read by whoever may read the object: they go through the redaction
	// Events do (Kong's messages can quote a credential, a UNIQUE violation its key).
	red := dataplane.RoundRedactor(r)
	// A gateway that took a fallback configuration took it without the refused objects and
	// their dependents: the others are programmed.
	for _, x := range refused.fallbackTaken {
		excluded[objgraph.Key(x)] = true
	}
	for _, e := range refused.entities {
		if e.Object.Name != "" {
			o.invalid[objgraph.Key(e.Object)] = red.String(fmt.Sprintf("Kong refused it: invalid %s: %s", orEntity(e.Field), e.Message))
		}
	}
	for _, p := range r.Problems {
		n := objgraph.Key(p.Object)
		if _, ok := o.invalid[n]; !ok {
			msg := p.Message
			if p.Field != "" {
				msg = p.Field + ": " + msg
			}
			o.invalid[n] = red.String(msg)
		}
	}
	var ts []string // reused: one slice per entity was most of this function's garbage per round
	eachEntityTags(r.State, func(tags []*string) {
		ts = ts[:0]
		for _, t := range tags {
			if t != nil {
				ts = append(ts, *t)
			}
		}
		if ref, ok := kongstate.ObjectRefFromTags(ts); ok && conditionedKinds[ref.Kind] {
			o.programmed[objgraph.Key(ref)] = true
		}
	})
	if o.dbless {
		// Custom entities and licenses carry no tags: the state says which object each
		// comes from.
		for _, e := range r.State.CustomEntities {
			o.programmed[objgraph.Key(e.Object)] = true
		}
		for _, l := range r.State.Licenses {
			o.programmed[objgraph.Key(l.Object)] = true
		}
	}
	for x := range excluded {
		delete(o.programmed, x)
	}
	return o
}

// eachEntityTags calls f with the tags of every entity of s that can come from an object
// with conditions: plugins wherever they are nested, consumers, groups and vaults. Services,
// routes, upstreams and certificates come from Ingresses, Services, Secrets and Gateway API
// routes, which have no Programmed condition: walking them only to drop them cost a tag parse
// per entity per round.
func eachEntityTags(s *kongstate.State, f func([]*string)) {
	for _, p := range s.AllPlugins() {
		f(p.Tags)
	}
	for _, c := range s.Consumers {
		f(c.Tags)
	}
	for _, g := range s.ConsumerGroups {
		f(g.Tags)
	}
	for _, v := range s.Vaults {
		f(v.Tags)
	}
}

// programmedKinds are the kinds Update reads: those with the condition.
var programmedKinds = store.NewKindSet(store.KindKongPlugin, store.KindKongClusterPlugin, store.KindKongConsumer,
	store.KindKongConsumerGroup, store.KindKongVault, store.KindKongCustomEntity, store.KindKongLicense)

// conditionedKinds are the names of programmedKinds. An outcome records only their objects as
// programmed: the Ingresses and Services behind most entities have no condition to write, and
// at 10,000 Ingresses their entries were 15 MB of the live heap (issue #13, memory).
var conditionedKinds = func() map[string]bool {
	names := map[string]bool{}
	for k := range programmedKinds {
		names[k.String()] = true
	}
	return names
}()

// conditioned is an object with status conditions, and its kind.
type conditioned struct {
	obj        client.Object
	gvk        schema.GroupVersionKind
	conditions func(client.Object) *[]metav1.Condition
}

// Update writes the Programmed condition of every object whose condition differs from the
// latest outcome.
func (u *ProgrammedUpdater) Update(ctx context.Context) error {
	u.mu.Lock()
	r := u.reached
	u.reached = nil
	u.mu.Unlock()
	if r != nil {
		u.unwalked = r
	}
	if u.unwalked == nil && u.last == nil {
		return nil // no round reached a gateway yet
	}
	snap, err := store.SnapshotOf(ctx, u.source, programmedKinds)
	if err != nil {
		return err
	}
	var objs []conditioned
	for _, p := range snap.KongPlugins {
		objs = append(objs, conditioned{p, gvkOf(p), func(o client.Object) *[]metav1.Condition { return &o.(*kongv1.KongPlugin).Status.Conditions }})
	}
	for _, p := range snap.KongClusterPlugins {
		objs = append(objs, conditioned{p, gvkOf(p), func(o client.Object) *[]metav1.Condition { return &o.(*kongv1.KongClusterPlugin).Status.Conditions }})
	}
	for _, c := range snap.KongConsumers {
		objs = append(objs, conditioned{c, gvkOf(c), func(o client.Object) *[]metav1.Condition { return &o.(*kongv1.KongConsumer).Status.Conditions }})
	}
	for _, g := range snap.KongConsumerGroups {
		objs = append(objs, conditioned{g, gvkOf(g), consumerGroupConditions})
	}
	for _, v := range snap.KongVaults {
		objs = append(objs, conditioned{v, gvkOf(v), vaultConditions})
	}
	for _, e := range snap.KongCustomEntities {
		objs = append(objs, conditioned{e, gvkOf(e), customEntityConditions})
	}
	licenses := snap.KongLicenses
	if u.NoLicenses {
		licenses = nil
	}
	if len(objs) == 0 && len(licenses) == 0 {
		return nil
	}
	if u.unwalked != nil {
		u.last, u.unwalked = outcomeOf(*u.unwalked), nil
	}
	o := u.last
	var errs []string
	errs = append(errs, u.updateLicenses(ctx, o, licenses)...)
	for _, c := range objs {
		want := o.condition(kongstate.RefFor(c.obj, c.gvk), c.obj.GetGeneration())
		if c.gvk.Kind == "KongCustomEntity" && want.Status == metav1.ConditionUnknown && !o.dbless {
			want.Message = "custom entities are sent to DB-less gateways only"
		}
		current := meta.FindStatusCondition(*c.conditions(c.obj), ConditionProgrammed)
		if current != nil && current.Status == want.Status && current.Reason == want.Reason &&
			current.Message == want.Message && current.ObservedGeneration == want.ObservedGeneration {
			continue
		}
		updated := c.obj.DeepCopyObject().(client.Object) // the snapshot's objects belong to the cache
		patch := client.MergeFrom(c.obj)
		want.LastTransitionTime = metav1.NewTime(u.now())
		meta.SetStatusCondition(c.conditions(updated), want)
		if err := u.writeStatus(ctx, updated, patch); err != nil {
			errs = append(errs, fmt.Sprintf("%s %s: %v", c.gvk.Kind, client.ObjectKeyFromObject(c.obj), err))
		}
	}
	sort.Strings(errs)
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// condition is the Programmed condition the outcome gives the object.
func (o *outcome) condition(ref kongstate.ObjectRef, generation int64) metav1.Condition {
	n := objgraph.Key(ref)
	c := metav1.Condition{Type: ConditionProgrammed, ObservedGeneration: generation}
	switch msg, invalid := o.invalid[n]; {
	case invalid:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonInvalid, msg
	case o.programmed[n]:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonProgrammed, "in the configuration the gateways took"
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, ReasonPending, "no object this controller serves uses it"
	}
	return c
}
