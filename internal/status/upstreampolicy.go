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
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// Conditions and reasons of a KongUpstreamPolicy's ancestors, KIC's (Gateway API's policy
// Accepted condition and the Programmed condition).
const (
	conditionAccepted   = string(gatewayv1.PolicyConditionAccepted)
	reasonAccepted      = string(gatewayv1.PolicyReasonAccepted)
	reasonConflicted    = string(gatewayv1.PolicyReasonConflicted)
	reasonPolicyInvalid = string(gatewayv1.PolicyReasonInvalid)
)

// UpstreamPolicyUpdater writes status.ancestors of KongUpstreamPolicies as KIC does: one entry
// per Service or KongServiceFacade the policy applies to through its konghq.com/upstream-policy
// annotation, with Accepted (False, Conflicted, when translation left the policy out of an
// HTTPRoute rule's upstream the Service shares with Services that name another policy or none;
// False, Invalid, when translation refused the policy) and Programmed (True once a gateway took a configuration with it). It follows
// what translation decided: the ancestors are the objects the latest translation applied the
// policy for (its object graph), Programmed the ones of the latest translation a gateway took.
// A leader-only runnable like the other updaters: rounds ask it to run, it writes apart from
// the sync loop, at the sync gate, only policies whose entries differ; other controllers'
// entries stay.
type UpstreamPolicyUpdater struct {
	runner
	statusWriter
	controller string
	source     dataplane.SnapshotSource
	reader     client.Reader // the API server, for a policy read again after a conflict
	now        func() time.Time

	mu         sync.Mutex
	latest     *policyTranslation // of the latest translation of the whole snapshot
	pending    *policyTranslation // latest, until a sync of it reached a gateway
	programmed *policyTranslation // the latest translation a gateway took
	refused    map[kongstate.ObjectRef]bool
}

// policyTranslation is what a round's translation says of upstream policies.
type policyTranslation struct {
	graph      *objgraph.Graph
	problems   []translator.Problem
	attachment *gatewayapi.Attachment // nil without Gateway API
}

// NewUpstreamPolicyUpdater returns an updater writing entries of controllerName (the Gateway
// API controller name, KIC's); it writes nothing until a round translated the snapshot.
func NewUpstreamPolicyUpdater(controllerName string, source dataplane.SnapshotSource, reader client.Reader, writer client.Client, log logr.Logger) *UpstreamPolicyUpdater {
	if controllerName == "" {
		controllerName = gatewayapi.DefaultControllerName
	}
	u := &UpstreamPolicyUpdater{controller: controllerName, source: source, reader: reader, statusWriter: statusWriter{client: writer}, now: time.Now}
	u.runner = newRunner("KongUpstreamPolicy status", log, u.Update)
	return u
}

var (
	_ GatedWriter        = (*UpstreamPolicyUpdater)(nil)
	_ dataplane.Reporter = (*UpstreamPolicyUpdater)(nil)
)

// Report implements dataplane.Reporter: a round that translated the snapshot is the latest
// translation; once a gateway took a configuration made from it (whole, all but refused
// objects, or a fallback configuration) it is the programmed one, with the objects the
// gateways refused or left out. It never blocks the loop.
func (u *UpstreamPolicyUpdater) Report(_ context.Context, r dataplane.Round) {
	if r.SnapshotErr != nil {
		return
	}
	u.mu.Lock()
	changed := false
	if r.Graph != nil {
		t := &policyTranslation{graph: r.Graph, problems: r.Problems, attachment: r.GatewayAPI}
		u.latest, u.pending, changed = t, t, true
	}
	if u.pending != nil && tookLatestConfiguration(r) {
		u.programmed, u.pending, u.refused, changed = u.pending, nil, refusedObjects(r), true
	}
	u.mu.Unlock()
	if changed {
		u.trigger.Request()
	}
}

// refusedObjects are the objects whose entities a gateway of r refused or left out of a
// configuration, a fallback one included (taken or not).
func refusedObjects(r dataplane.Round) map[kongstate.ObjectRef]bool {
	refused := refusalsOf(r.Gateways)
	out := map[kongstate.ObjectRef]bool{}
	for _, e := range refused.entities {
		out[graphNode(e.Object)] = true
	}
	for _, xs := range [][]kongstate.ObjectRef{refused.isolated, refused.fallbackTaken, refused.fallbackFailed} {
		for _, x := range xs {
			out[graphNode(x)] = true
		}
	}
	return out
}

// Update writes status.ancestors of every KongUpstreamPolicy whose entries of our controller
// differ from what the latest translation says. The patch carries the resourceVersion, so that
// an entry another controller wrote meanwhile is not lost; on a conflict (theirs, or our own
// previous write the cache has not seen yet) the policy is read again from the API server.
func (u *UpstreamPolicyUpdater) Update(ctx context.Context) error {
	// A round's translation asks for an update while its sync is still pending: the entries
	// are read once that sync ended and was reported (the gate opens only then), so that one
	// change is one write, Accepted and Programmed at once, not Pending then Programmed. A
	// sync that failed leaves them Pending; one slower than the gate's MaxWait has them
	// written Pending first, then Programmed.
	u.syncs.Wait(ctx)
	u.mu.Lock()
	in := upstreamPolicyInputs{latest: u.latest, programmed: u.programmed, refused: u.refused}
	u.mu.Unlock()
	if in.latest == nil {
		return nil // nothing translated yet
	}
	kinds := store.NewKindSet(store.KindKongUpstreamPolicy)
	if slices.ContainsFunc(in.latest.problems, translator.Problem.IsUpstreamPolicyConflict) {
		// The conflicted Services name their policy in an annotation.
		kinds = store.NewKindSet(store.KindKongUpstreamPolicy, store.KindService)
	}
	snap, err := store.SnapshotOf(ctx, u.source, kinds)
	if err != nil || len(snap.KongUpstreamPolicies) == 0 {
		return err
	}
	in.conflicts = conflictedServices(in.latest.problems, snap.Services)
	now := u.now()
	var errs []string
	for _, p := range snap.KongUpstreamPolicies {
		if p == nil {
			continue
		}
		entries := in.ancestors(p)
		// The entries are the snapshot's spec's verdict: its generation is the one observed,
		// not a newer one the policy has when read again after a conflict.
		generation := p.Generation
		err := u.writeStatusRetrying(ctx, u.reader, p, func() client.Object { return &kongv1beta1.KongUpstreamPolicy{} }, func(current client.Object) client.Object {
			cp := current.(*kongv1beta1.KongUpstreamPolicy)
			have := cp.Status.Ancestors
			want := mergeAncestors(have, entries, u.controller, generation, now)
			if equality.Semantic.DeepEqual(want, have) || len(want) == 0 && len(have) == 0 {
				return nil
			}
			updated := cp.DeepCopy()
			updated.Status.Ancestors = want
			return updated
		})
		if err != nil {
			errs = append(errs, fmt.Sprintf("KongUpstreamPolicy %s/%s: %v", p.Namespace, p.Name, err))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// upstreamPolicyInputs is what a policy's ancestors are computed from.
type upstreamPolicyInputs struct {
	latest     *policyTranslation
	programmed *policyTranslation // nil until a sync reached a gateway
	refused    map[kongstate.ObjectRef]bool
	// conflicts: per policy ("namespace/name"), its conflicted Services ("namespace/name")
	// and why.
	conflicts map[string]map[string]string
}

var (
	gvkService          = store.KindService.GroupVersionKind()
	gvkServiceFacade    = store.KindKongServiceFacade.GroupVersionKind()
	gvkUpstreamPolicyGK = store.KindKongUpstreamPolicy.GroupVersionKind()
)

// ancestors are the entries our controller gives policy p: its Services, then its
// KongServiceFacades, each sorted by name (all are in the policy's namespace), with KIC's
// ancestorRef (group "core" for a Service).
func (in upstreamPolicyInputs) ancestors(p *kongv1beta1.KongUpstreamPolicy) []ancestorEntry {
	policy := kongstate.ObjectRef{Group: gvkUpstreamPolicyGK.Group, Kind: gvkUpstreamPolicyGK.Kind, Namespace: p.Namespace, Name: p.Name}
	conflicts := in.conflicts[p.Namespace+"/"+p.Name]
	var services, facades []string
	seen := map[kongstate.ObjectRef]bool{}
	for _, r := range in.latest.graph.ReferredBy(policy) {
		if r.Namespace != p.Namespace {
			continue
		}
		switch {
		case isKind(r, gvkService.Group, gvkService.Kind):
			services = append(services, r.Name)
		case isKind(r, gvkServiceFacade.Group, gvkServiceFacade.Kind):
			facades = append(facades, r.Name)
		default:
			continue
		}
		seen[objgraph.Key(r)] = true
	}
	for key := range conflicts {
		_, name, _ := strings.Cut(key, "/")
		if !seen[serviceRef(p.Namespace, name)] {
			services = append(services, name)
		}
	}
	sort.Strings(services)
	sort.Strings(facades)

	invalid := ""
	for _, pr := range in.latest.problems {
		if pr.Object.Kind == policy.Kind && pr.Object.Group == policy.Group && pr.Object.Namespace == p.Namespace && pr.Object.Name == p.Name {
			invalid = pr.Message
			if pr.Field != "" {
				invalid = pr.Field + ": " + pr.Message
			}
			break
		}
	}
	entry := func(ref kongstate.ObjectRef, group string, conflict string) ancestorEntry {
		accepted := metav1.Condition{Type: conditionAccepted, Status: metav1.ConditionTrue, Reason: reasonAccepted}
		programmed := metav1.Condition{Type: ConditionProgrammed, Status: metav1.ConditionTrue, Reason: ReasonProgrammed}
		switch {
		case invalid != "":
			accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionFalse, reasonPolicyInvalid, invalid
			programmed.Status, programmed.Reason, programmed.Message = metav1.ConditionFalse, ReasonInvalid, "the policy is not applied"
		case conflict != "":
			accepted.Status, accepted.Reason, accepted.Message = metav1.ConditionFalse, reasonConflicted, conflict
			programmed.Status, programmed.Reason, programmed.Message = metav1.ConditionFalse, ReasonPending, "the policy is not applied"
		case in.refused[objgraph.Key(ref)]:
			programmed.Status, programmed.Reason, programmed.Message = metav1.ConditionFalse, ReasonInvalid, "a gateway refused the entities of its "+ref.Kind
		case !in.programmedFor(ref, policy):
			programmed.Status, programmed.Reason, programmed.Message = metav1.ConditionFalse, ReasonPending, "not yet in a configuration a gateway took"
		}
		return ancestorEntry{ref: ancestorRef(group, ref.Kind, ref.Namespace, ref.Name), conditions: []metav1.Condition{accepted, programmed}}
	}
	out := make([]ancestorEntry, 0, len(services)+len(facades))
	for _, name := range services {
		out = append(out, entry(serviceRef(p.Namespace, name), "core", conflicts[p.Namespace+"/"+name]))
	}
	for _, name := range facades {
		ref := kongstate.ObjectRef{Group: gvkServiceFacade.Group, Kind: gvkServiceFacade.Kind, Namespace: p.Namespace, Name: name}
		out = append(out, entry(ref, gvkServiceFacade.Group, ""))
	}
	return out
}

// programmedFor: the translation a gateway took applied the policy for ancestor.
func (in upstreamPolicyInputs) programmedFor(ancestor, policy kongstate.ObjectRef) bool {
	if in.programmed == nil {
		return false
	}
	for _, r := range in.programmed.graph.References(ancestor) {
		if objgraph.Key(r) == objgraph.Key(policy) {
			return true
		}
	}
	return false
}

// graphNode is ref as the translation's graph names it: entity tags name the core group
// "core", the graph "".
func graphNode(ref kongstate.ObjectRef) kongstate.ObjectRef {
	n := objgraph.Key(ref)
	if n.Group == "core" {
		n.Group = ""
	}
	return n
}

func serviceRef(namespace, name string) kongstate.ObjectRef {
	return kongstate.ObjectRef{Group: gvkService.Group, Kind: gvkService.Kind, Namespace: namespace, Name: name}
}

func isKind(r kongstate.ObjectRef, group, kind string) bool {
	return r.Kind == kind && r.Group == group
}

// conflictedServices are the Services whose policy the latest translation did not apply to an
// upstream they share with Services that name another policy, or none (an HTTPRoute rule's
// backends): the translation's conflict problems, so that the status says what translation
// did (KIC's status counts every backendRef of a rule, translation only the resolved ones,
// and compares policies by name). The policy is the one the Service's annotation names, in
// its namespace. The result is keyed by policy, then Service ("namespace/name"), with why.
func conflictedServices(problems []translator.Problem, services []*corev1.Service) map[string]map[string]string {
	var out map[string]map[string]string
	var annotated map[string]string // Service -> "namespace/policy", made when a problem needs it
	for _, pr := range problems {
		if !pr.IsUpstreamPolicyConflict() {
			continue
		}
		if annotated == nil {
			annotated = map[string]string{}
			for _, svc := range services {
				if svc == nil {
					continue
				}
				if name := svc.Annotations[kongv1beta1.KongUpstreamPolicyAnnotationKey]; name != "" {
					annotated[svc.Namespace+"/"+svc.Name] = svc.Namespace + "/" + name
				}
			}
		}
		key := pr.Object.Namespace + "/" + pr.Object.Name
		policy := annotated[key]
		if policy == "" || out[policy][key] != "" {
			continue
		}
		if out == nil {
			out = map[string]map[string]string{}
		}
		if out[policy] == nil {
			out[policy] = map[string]string{}
		}
		out[policy][key] = pr.Message + ": the backends of an HTTPRoute rule share one Kong upstream, which takes one KongUpstreamPolicy only"
	}
	return out
}
