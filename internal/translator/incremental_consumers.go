package translator

import (
	"github.com/kong/go-database-reconciler/pkg/file"
	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
)

// spliceConsumers is Incremental's splice of KongConsumer and credential Secret changes
// (issue #13 item 2: a cluster of thousands of API-key customers): the changed KongConsumers
// and those that read a changed Secret (the closure) are translated as a snapshot of their
// own, with every KongConsumerGroup, and their consumers, problems and graph edges replace
// theirs in res; every other consumer is res's, the same pointer, so that a Renderer reuses
// its bytes. A consumer touches no Kong service, route or plugin but those its plugins make, so
// the splice is taken only where that is so; anything else is a full Build (why says why):
//   - the changed Secrets are read by KongConsumers only, and none is a CA certificate's;
//   - a closure KongConsumer with konghq.com/plugins (old or new) has the same annotation in
//     both versions and is translated in both under the same username or custom_id: its
//     plugin entities (merged with the other objects', KIC's combinations) are then res's,
//     and only its problems and references are the partial translation's;
//   - no closure KongConsumer is referred to by anything, or refers to anything but Secrets,
//     KongConsumerGroups and (with the annotation) plugins, nor has (old or new) a username
//     a custom entity looked a consumer up by (consumerIDOf);
//   - no credential conflicted, in res or in the partial result, and no credential of the
//     closure holds a value unique to one consumer (a key-auth key, ...) that another
//     consumer holds (KIC then leaves out every consumer involved);
//   - the partial result has nothing but consumers, consumer groups and plugins, and problems
//     and references of the closure only, but for the consumer groups' and plugins' (res's,
//     the same: they did not change, nor the consumers their plugins attach to).
//
// res is the round's result so far (the previous one, with the Kong services spliced); prev
// is the previous round, whose KongConsumer index is the new snapshot's already.
func spliceConsumers(prev *incrementalRound, snap *store.Snapshot, opts Options, res Result, changed map[nsName]*kongv1.KongConsumer, secrets map[nsName]bool) (Result, string) {
	closure, why := consumerClosure(prev, res, changed, secrets)
	if why != "" {
		return Result{}, why
	}
	sub, subjects, withPlugins, why := consumerSnapshot(prev, snap, res, changed, closure)
	if why != "" {
		return Result{}, why
	}
	part := build(sub, opts, nil)
	problems, edges, why := checkConsumerPart(res, part, subjects, withPlugins)
	if why != "" {
		return Result{}, why
	}
	if why := credentialsHeldElsewhere(prev, res, part, closure); why != "" {
		return Result{}, why
	}
	return mergeConsumers(prev, res, part, closure, subjects, problems, edges), ""
}

// consumerClosure is the consumers the change reaches: those changed and those reading a
// Secret of the change.
func consumerClosure(prev *incrementalRound, res Result, changed map[nsName]*kongv1.KongConsumer, secrets map[nsName]bool) (map[nsName]struct{}, string) {
	if res.parts.consumers.conflict {
		return nil, "consumers' credentials conflicted"
	}
	contested := func(kc *kongv1.KongConsumer) bool {
		for _, v := range consumerNames(kc) {
			if _, ok := res.parts.consumers.contested[v]; ok {
				return true
			}
		}
		return false
	}
	closure := make(map[nsName]struct{}, len(changed)+len(secrets))
	for k := range changed {
		closure[k] = struct{}{}
	}
	for k, caCert := range secrets {
		if caCert {
			return nil, "a CA certificate's Secret changed"
		}
		for _, from := range res.Graph.ReferredBy(ref(gvkSecret, k.ns, k.name)) {
			if from.Kind != gvkKongConsumer.Kind || from.Group != gvkKongConsumer.Group {
				return nil, "a Secret of the change is read by a " + from.Kind
			}
			closure[nsName{from.Namespace, from.Name}] = struct{}{}
		}
	}
	for k := range closure {
		if _, out := res.parts.leftOut[objgraph.NodeOf(ref(gvkKongConsumer, k.ns, k.name))]; out {
			return nil, "the change reaches an object left out for its plugins"
		}
		// A consumer left out for a name an older one holds comes back when either changes.
		for _, c := range []*kongv1.KongConsumer{changed[k], prev.consumers.get(k)} {
			if c != nil && contested(c) {
				return nil, "a KongConsumer of the change has a username or custom_id another claims"
			}
		}
	}
	return closure, ""
}

// consumerSnapshot is the closure's consumers as a snapshot of their own, with every plugin
// and ReferenceGrant (a closure consumer's plugins are translated again, so that its problems
// and references are a full Build's; its plugin entities are res's) and the Secrets they read;
// subjects are their graph nodes, withPlugins those whose plugins must stay as they were;
// why says why a closure consumer cannot be translated alone, if one cannot.
func consumerSnapshot(prev *incrementalRound, snap *store.Snapshot, res Result, changed map[nsName]*kongv1.KongConsumer, closure map[nsName]struct{}) (
	sub *store.Snapshot, subjects map[objgraph.Node]struct{}, withPlugins map[nsName]struct{}, why string) {
	oldConsumer := func(k nsName) *kongv1.KongConsumer {
		if old, ok := changed[k]; ok {
			return old
		}
		return prev.consumers.get(k)
	}
	sub = &store.Snapshot{IngressClass: snap.IngressClass, IngressClassIsDefault: snap.IngressClassIsDefault,
		IngressClassParameters: snap.IngressClassParameters, KongConsumerGroups: snap.KongConsumerGroups,
		KongPlugins: snap.KongPlugins, KongClusterPlugins: snap.KongClusterPlugins, ReferenceGrants: snap.ReferenceGrants}
	credentials := map[nsName]struct{}{} // the Secrets to translate with: credentials, plugins' configurations
	subjects = make(map[objgraph.Node]struct{}, len(closure))
	withPlugins = map[nsName]struct{}{}
	for k := range closure {
		old, kc := oldConsumer(k), prev.consumers.get(k)
		plugins, hasPlugins := "", false
		for _, c := range []*kongv1.KongConsumer{old, kc} {
			if c != nil {
				if list, ok := c.Annotations[annPlugins]; ok {
					plugins, hasPlugins = list, true
				}
			}
		}
		if hasPlugins {
			// Its plugin entities name it by username (or custom_id): they stay res's when
			// both versions name the same plugins and the consumer is translated, under the
			// same name, before and after (checked on the partial result below).
			// Its creation time too: plugins are ranked by the first consumer (oldest first)
			// naming them, which decides the winner of two plugins of one name on another
			// consumer (a consumer deleted and created again in one round).
			if old == nil || kc == nil || old.Annotations[annPlugins] != plugins || kc.Annotations[annPlugins] != plugins ||
				!old.CreationTimestamp.Equal(&kc.CreationTimestamp) {
				return nil, nil, nil, "a KongConsumer of the change has plugins that changed"
			}
			withPlugins[k] = struct{}{}
		}
		for _, c := range []*kongv1.KongConsumer{old, kc} {
			if c == nil {
				continue
			}
			for _, v := range consumerNames(c) {
				if hasKey(res.parts.consumers.lookedUp, v) {
					return nil, nil, nil, "a custom entity looks a KongConsumer of the change up by name"
				}
			}
		}
		at := ref(gvkKongConsumer, k.ns, k.name)
		if why := consumerEdges(res, at, hasPlugins, credentials); why != "" {
			return nil, nil, nil, why
		}
		subjects[objgraph.NodeOf(at)] = struct{}{}
		if kc := prev.consumers.get(k); kc != nil {
			sub.KongConsumers = append(sub.KongConsumers, kc)
			for _, name := range kc.Credentials {
				credentials[nsName{kc.Namespace, name}] = struct{}{}
			}
		}
	}
	if len(credentials) > 0 {
		for _, s := range snap.Secrets {
			if s != nil {
				if _, ok := credentials[keyOf(s)]; ok {
					sub.Secrets = append(sub.Secrets, s)
				}
			}
		}
	}

	return sub, subjects, withPlugins, ""
}

// consumerEdges says why the closure consumer at cannot be spliced for its graph edges, if it
// cannot: only Secrets, KongConsumerGroups and (hasPlugins) plugins may be read by a consumer
// translated alone, and nothing may read it. The Secrets its plugins read are added to
// credentials.
func consumerEdges(res Result, at kongstate.ObjectRef, hasPlugins bool, credentials map[nsName]struct{}) string {
	if from := res.Graph.ReferredBy(at); len(from) > 0 {
		return "a KongConsumer of the change is referred to by a " + from[0].Kind
	}
	for _, to := range res.Graph.References(at) {
		switch {
		case to.Kind == gvkSecret.Kind && to.Group == "":
		case to.Kind == gvkKongConsumerGroup.Kind && to.Group == gvkKongConsumerGroup.Group:
		case hasPlugins && (to.Kind == gvkKongPlugin.Kind || to.Kind == gvkKongClusterPlugin.Kind) && to.Group == gvkKongPlugin.Group:
			// The Secrets its configuration reads (configFrom, configPatches), so that
			// the plugin resolves as in a full Build.
			for _, from := range res.Graph.References(to) {
				if from.Kind == gvkSecret.Kind && from.Group == "" {
					credentials[nsName{from.Namespace, from.Name}] = struct{}{}
				}
			}
		default:
			return "a KongConsumer of the change refers to a " + to.Kind
		}
	}
	return ""
}

// checkConsumerPart checks the closure's translation and returns its problems and graph
// edges, those of the closure's consumers alone.
func checkConsumerPart(res, part Result, subjects map[objgraph.Node]struct{}, withPlugins map[nsName]struct{}) ([]Problem, *objgraph.Graph, string) {
	if len(part.parts.leftOut) > 0 {
		return nil, nil, leftOutReason
	}
	if len(part.parts.consumers.contested) > 0 {
		return nil, nil, "the change's usernames or custom_ids conflict"
	}
	if part.parts.consumers.conflict {
		return nil, nil, "the change's credentials conflict"
	}
	if other := otherEntities(part.State, "Consumers", "ConsumerGroups", "Plugins"); other != "" {
		return nil, nil, "the change's translation makes " + other
	}
	// The consumers with plugins: translated before and after under the same name.
	if len(withPlugins) > 0 {
		idents := map[nsName]string{}
		for i, fc := range res.State.Consumers {
			if k := keyOf(res.parts.consumers.objs[i]); hasKey(withPlugins, k) {
				idents[k] = consumerIdent(fc)
			}
		}
		for i, fc := range part.State.Consumers {
			k := keyOf(part.parts.consumers.objs[i])
			if before, ok := idents[k]; ok && before == consumerIdent(fc) {
				delete(withPlugins, k)
			}
		}
		if len(withPlugins) > 0 {
			return nil, nil, "a KongConsumer of the change with plugins is translated otherwise"
		}
	}
	// The consumer groups' and plugins' problems and references are res's: they did not
	// change, nor did (above) the consumers their plugins attach to.
	unchangedObject := func(n objgraph.Node) bool {
		return n.IsKind(gvkKongConsumerGroup.Group, gvkKongConsumerGroup.Kind) ||
			n.IsKind(gvkKongPlugin.Group, gvkKongPlugin.Kind) || n.IsKind(gvkKongClusterPlugin.Group, gvkKongClusterPlugin.Kind)
	}
	var problems []Problem
	for _, p := range part.Problems {
		n := objgraph.NodeOf(p.Object)
		if _, in := subjects[n]; in {
			problems = append(problems, p)
		} else if !unchangedObject(n) {
			return nil, nil, "a problem is reported on " + p.Object.String()
		}
	}
	inClosure := func(n objgraph.Node) bool { _, in := subjects[n]; return in }
	for from := range part.Graph.Edges() {
		if !inClosure(from) && !unchangedObject(from) {
			return nil, nil, from.String() + " gets a reference"
		}
	}
	edges := part.Graph.Only(inClosure) // the closure's

	return problems, edges, ""
}

// credentialsHeldElsewhere says why a credential unique to a consumer, a username or a
// custom_id of the closure's new consumers is held by another consumer ("" when none is).
func credentialsHeldElsewhere(prev *incrementalRound, res, part Result, closure map[nsName]struct{}) string {
	// Credentials unique to a consumer, and its username and custom_id: those of the
	// closure's new consumers may be held by no other consumer.
	objs, list := res.parts.consumers.objs, res.State.Consumers
	if prev.credentialHolders == nil {
		prev.credentialHolders = make(map[string]nsName, len(list))
		for i, fc := range list {
			for _, v := range credentialKeys(fc) {
				prev.credentialHolders[v] = keyOf(objs[i])
			}
		}
	}
	holders := prev.credentialHolders
	for _, fc := range part.State.Consumers {
		for _, v := range credentialKeys(fc) {
			if k, held := holders[v]; held {
				if _, in := closure[k]; !in {
					return "a credential, username or custom_id of the change is another consumer's"
				}
			}
		}
	}
	return ""
}

// mergeConsumers splices the closure's translation into res.
func mergeConsumers(prev *incrementalRound, res, part Result, closure map[nsName]struct{}, subjects map[objgraph.Node]struct{}, problems []Problem, edges *objgraph.Graph) Result {
	// res's consumers but the closure's, with the closure's new ones where their age puts
	// them (sortByAge's order, which both lists are in).
	objs, list := res.parts.consumers.objs, res.State.Consumers
	holders := prev.credentialHolders
	newObjs, newList := part.parts.consumers.objs, part.State.Consumers
	mergedObjs := make([]*kongv1.KongConsumer, 0, len(objs)+len(newObjs))
	merged := make([]*file.FConsumer, 0, len(list)+len(newList))
	j := 0
	for i, o := range objs {
		if _, in := closure[keyOf(o)]; in {
			for _, v := range credentialKeys(list[i]) {
				delete(holders, v)
			}
			continue
		}
		for ; j < len(newObjs) && olderThan(newObjs[j], o); j++ {
			mergedObjs, merged = append(mergedObjs, newObjs[j]), append(merged, newList[j])
		}
		mergedObjs, merged = append(mergedObjs, o), append(merged, list[i])
	}
	mergedObjs, merged = append(mergedObjs, newObjs[j:]...), append(merged, newList[j:]...)
	for i, fc := range newList {
		for _, v := range credentialKeys(fc) {
			holders[v] = keyOf(newObjs[i])
		}
	}

	state := *res.State
	state.Consumers = merged
	if len(merged) == 0 {
		state.Consumers = nil // as Build leaves it
	}
	kept := make([]Problem, 0, len(res.Problems)+len(problems))
	for _, p := range res.Problems {
		if _, in := subjects[objgraph.NodeOf(p.Object)]; !in {
			kept = append(kept, p)
		}
	}
	parts := *res.parts
	parts.consumers = consumerParts{objs: mergedObjs, lookedUp: res.parts.consumers.lookedUp, // the custom entities are res's
		contested: res.parts.consumers.contested} // no closure consumer's names were
	res.State, res.Problems, res.parts = &state, sortProblems(append(kept, problems...)), &parts
	res.Graph = res.Graph.ReplaceEdgesFrom(subjects, edges)
	return res
}

// credentialKeys are the values of fc's credentials that must be unique across consumers,
// each with its credential type's index (consumers' conflict check).
func credentialKeys(fc *file.FConsumer) []string {
	var out []string
	add := func(index string, v *string) {
		if v != nil {
			out = append(out, index+"\x00"+kongstate.RepairUTF8(*v)) // as Kong holds it (consumers.go)
		}
	}
	for _, c := range fc.KeyAuths {
		add("key-auth", c.Key)
	}
	for _, c := range fc.BasicAuths {
		add("basic-auth", c.Username)
	}
	for _, c := range fc.HMACAuths {
		add("hmac-auth", c.Username)
	}
	for _, c := range fc.JWTAuths {
		add("jwt", c.Key)
	}
	for _, c := range fc.Oauth2Creds {
		add("oauth2", c.ClientID)
	}
	// The consumer's own names are unique keys too, one identity space (consumerNameTaken).
	add("consumer", fc.Username)
	if fc.CustomID != nil && (fc.Username == nil || *fc.CustomID != *fc.Username) {
		add("consumer", fc.CustomID)
	}
	return out
}

func hasKey[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
}
