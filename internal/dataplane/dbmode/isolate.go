package dbmode

import (
	"errors"
	"fmt"
	"sort"

	"github.com/kong/go-database-reconciler/pkg/state"
	"github.com/kong/go-database-reconciler/pkg/utils"
	"github.com/kong/go-kong/kong"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
)

// Isolating refused objects (invariant 5: bad input is contained).
//
// go-database-reconciler stops at the first failed request, so one entity Kong refuses would
// hold back every change after it. When a sync ends with refusals only, Apply finds the
// Kubernetes objects of the refused entities (their k8s-* tags), leaves every entity of
// those objects out, and syncs again, up to maxPasses times in one call. Each further pass
// isolates at least one more object, or the call ends, so it always terminates.
//
// "Left out" means left out of both sides of the diff: the entities of a refused object are
// removed from the target AND from the current state, so the syncer neither writes nor
// deletes them. Kong keeps whatever it held for that object, its last good version (or
// nothing, for an object Kong never accepted). The alternative, putting Kong's current
// version back into the target, would do the same with more code, and could not express
// "keep" for entities whose IDs the target renders differently.
//
// Dependents follow foreign keys (route→service, target→upstream, SNI→certificate,
// plugin→service/route/consumer/consumer group, service/upstream→client certificate):
//
//   - A target entity whose parent was left out keeps its place when Kong holds that parent
//     (the parent's last good version stays, so the child can still be created or updated
//     against it): the routes of other Ingresses keep pointing at the Kong service of a
//     refused Service object, and go on being synced. Only when Kong does not hold the
//     parent (it was refused on its first create) is the child left out too, as Kong would
//     refuse it for a missing foreign key. Such a child is reported on its own object
//     with a message naming the refused parent, so that object's owner learns why.
//   - A current entity that is kept keeps its current parents: a parent the target no
//     longer has is not deleted (Kong would refuse deleting a service its routes use, and
//     the kept child needs it).
const maxPasses = 5

// entity is one entity of a state.KongState, reduced to what isolation needs.
type entity struct {
	key     string // kind/id: IDs are unique per kind, not necessarily across kinds
	kind    string
	name    string
	tags    []*string
	parents []string // keys of the entities its foreign keys name
	remove  func(*state.KongState) error
}

// entities lists the entities of the kinds the translator generates. Other kinds (a
// consumer someone tagged by hand) have no k8s-* tags of ours and are never isolated.
// Licenses have no tags: those of licenses, by ID, are given the tags of their KongLicense,
// and a license that is not there (made by hand) is never isolated.
func entities(ks *state.KongState, licenses map[string]kongstate.ObjectRef) (map[string]*entity, error) {
	out := map[string]*entity{}
	add := func(e *entity) { out[e.key] = e }
	ref := func(kind string, id *string) []string {
		if id == nil || *id == "" {
			return nil
		}
		return []string{kind + "/" + *id}
	}
	err := errors.Join(
		addEach(add, ks.Licenses.GetAll, func(l *state.License) *entity {
			id := *l.ID
			var tags []*string
			if ref, ok := licenses[id]; ok {
				tags = kong.StringSlice(ref.Tags()...)
			}
			return &entity{key: "license/" + id, kind: "license", name: id, tags: tags,
				remove: func(k *state.KongState) error { return k.Licenses.Delete(id) }}
		}),
		addEach(add, ks.Services.GetAll, func(s *state.Service) *entity {
			id := *s.ID
			var parents []string
			if s.ClientCertificate != nil {
				parents = ref("certificate", s.ClientCertificate.ID)
			}
			return &entity{key: "service/" + id, kind: "service", name: kong.StringValue(s.Name), tags: s.Tags, parents: parents,
				remove: func(k *state.KongState) error { return k.Services.Delete(id) }}
		}),
		addEach(add, ks.Routes.GetAll, func(r *state.Route) *entity {
			id := *r.ID
			var parents []string
			if r.Service != nil {
				parents = ref("service", r.Service.ID)
			}
			return &entity{key: "route/" + id, kind: "route", name: kong.StringValue(r.Name), tags: r.Tags, parents: parents,
				remove: func(k *state.KongState) error { return k.Routes.Delete(id) }}
		}),
		addEach(add, ks.Upstreams.GetAll, func(u *state.Upstream) *entity {
			id := *u.ID
			var parents []string
			if u.ClientCertificate != nil {
				parents = ref("certificate", u.ClientCertificate.ID)
			}
			return &entity{key: "upstream/" + id, kind: "upstream", name: kong.StringValue(u.Name), tags: u.Tags, parents: parents,
				remove: func(k *state.KongState) error { return k.Upstreams.Delete(id) }}
		}),
		addEach(add, ks.Targets.GetAll, func(t *state.Target) *entity {
			id, upstreamID := *t.ID, ""
			if t.Upstream != nil {
				upstreamID = kong.StringValue(t.Upstream.ID)
			}
			return &entity{key: "target/" + id, kind: "target", name: kong.StringValue(t.Target.Target), tags: t.Tags,
				parents: ref("upstream", &upstreamID),
				remove:  func(k *state.KongState) error { return k.Targets.Delete(upstreamID, id) }}
		}),
		addEach(add, ks.Certificates.GetAll, func(c *state.Certificate) *entity {
			id := *c.ID
			return &entity{key: "certificate/" + id, kind: "certificate", name: id, tags: c.Tags,
				remove: func(k *state.KongState) error { return k.Certificates.Delete(id) }}
		}),
		addEach(add, ks.SNIs.GetAll, func(s *state.SNI) *entity {
			id := *s.ID
			var parents []string
			if s.Certificate != nil {
				parents = ref("certificate", s.Certificate.ID)
			}
			return &entity{key: "sni/" + id, kind: "sni", name: kong.StringValue(s.Name), tags: s.Tags, parents: parents,
				remove: func(k *state.KongState) error { return k.SNIs.Delete(id) }}
		}),
		addEach(add, ks.Plugins.GetAll, func(p *state.Plugin) *entity {
			id := *p.ID
			var parents []string
			if p.Service != nil {
				parents = append(parents, ref("service", p.Service.ID)...)
			}
			if p.Route != nil {
				parents = append(parents, ref("route", p.Route.ID)...)
			}
			if p.Consumer != nil {
				parents = append(parents, ref("consumer", p.Consumer.ID)...)
			}
			if p.ConsumerGroup != nil {
				parents = append(parents, ref("consumer-group", p.ConsumerGroup.ID)...)
			}
			return &entity{key: "plugin/" + id, kind: "plugin", name: kong.StringValue(p.Name), tags: p.Tags, parents: parents,
				remove: func(k *state.KongState) error { return k.Plugins.Delete(id) }}
		}),
		addEach(add, ks.Consumers.GetAll, func(c *state.Consumer) *entity {
			id := *c.ID
			return &entity{key: "consumer/" + id, kind: "consumer", name: kong.StringValue(c.Username), tags: c.Tags,
				remove: func(k *state.KongState) error { return k.Consumers.Delete(id) }}
		}),
		addEach(add, ks.ConsumerGroups.GetAll, func(g *state.ConsumerGroup) *entity {
			id := *g.ID
			return &entity{key: "consumer-group/" + id, kind: "consumer-group", name: kong.StringValue(g.Name), tags: g.Tags,
				remove: func(k *state.KongState) error { return k.ConsumerGroups.Delete(id) }}
		}),
		// A membership has no ID and no tags: it goes with its consumer or its group.
		addEach(add, ks.ConsumerGroupConsumers.GetAll, func(m *state.ConsumerGroupConsumer) *entity {
			consumerID, groupID := kong.StringValue(m.Consumer.ID), kong.StringValue(m.ConsumerGroup.ID)
			return &entity{key: membershipKey(groupID, consumerID), kind: "consumer-group-consumer", name: consumerID,
				parents: append(ref("consumer", &consumerID), ref("consumer-group", &groupID)...),
				remove:  func(k *state.KongState) error { return k.ConsumerGroupConsumers.Delete(consumerID, groupID) }}
		}),
		addEach(add, ks.KeyAuths.GetAll, func(c *state.KeyAuth) *entity {
			return credential("key-auth", c.ID, c.Consumer, c.Tags, ref, func(k *state.KongState, id string) error { return k.KeyAuths.Delete(id) })
		}),
		addEach(add, ks.HMACAuths.GetAll, func(c *state.HMACAuth) *entity {
			return credential("hmac-auth", c.ID, c.Consumer, c.Tags, ref, func(k *state.KongState, id string) error { return k.HMACAuths.Delete(id) })
		}),
		addEach(add, ks.JWTAuths.GetAll, func(c *state.JWTAuth) *entity {
			return credential("jwt", c.ID, c.Consumer, c.Tags, ref, func(k *state.KongState, id string) error { return k.JWTAuths.Delete(id) })
		}),
		addEach(add, ks.BasicAuths.GetAll, func(c *state.BasicAuth) *entity {
			return credential("basic-auth", c.ID, c.Consumer, c.Tags, ref, func(k *state.KongState, id string) error { return k.BasicAuths.Delete(id) })
		}),
		addEach(add, ks.ACLGroups.GetAll, func(c *state.ACLGroup) *entity {
			return credential("acl", c.ID, c.Consumer, c.Tags, ref, func(k *state.KongState, id string) error { return k.ACLGroups.Delete(id) })
		}),
		addEach(add, ks.Oauth2Creds.GetAll, func(c *state.Oauth2Credential) *entity {
			return credential("oauth2", c.ID, c.Consumer, c.Tags, ref, func(k *state.KongState, id string) error { return k.Oauth2Creds.Delete(id) })
		}),
		addEach(add, ks.MTLSAuths.GetAll, func(c *state.MTLSAuth) *entity {
			return credential("mtls-auth", c.ID, c.Consumer, c.Tags, ref, func(k *state.KongState, id string) error { return k.MTLSAuths.Delete(id) })
		}),
		addEach(add, ks.CACertificates.GetAll, func(c *state.CACertificate) *entity {
			id := *c.ID
			return &entity{key: "ca-certificate/" + id, kind: "ca-certificate", name: id, tags: c.Tags,
				remove: func(k *state.KongState) error { return k.CACertificates.Delete(id) }}
		}),
		addEach(add, ks.Vaults.GetAll, func(v *state.Vault) *entity {
			id := *v.ID
			return &entity{key: "vault/" + id, kind: "vault", name: kong.StringValue(v.Prefix), tags: v.Tags,
				remove: func(k *state.KongState) error { return k.Vaults.Delete(id) }}
		}),
	)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// credential is the entity of a consumer's credential: its object is its Secret (its tags),
// and it goes with its consumer when that is left out and Kong does not hold it.
func credential(kind string, id *string, consumer *kong.Consumer, tags []*string, ref func(string, *string) []string,
	remove func(*state.KongState, string) error) *entity {
	var parents []string
	if consumer != nil {
		parents = ref("consumer", consumer.ID)
	}
	key := kong.StringValue(id)
	return &entity{key: kind + "/" + key, kind: kind, name: key, tags: tags, parents: parents,
		remove: func(k *state.KongState) error { return remove(k, key) }}
}

// membershipKey is the key of a consumer's membership of a consumer group.
func membershipKey(groupID, consumerID string) string {
	return "consumer-group-consumer/" + groupID + "/" + consumerID
}

// addEach adds the entity of every item list gives.
func addEach[E any](add func(*entity), list func() ([]E, error), entityOf func(E) *entity) error {
	items, err := list()
	if err != nil {
		return err
	}
	for _, it := range items {
		add(entityOf(it))
	}
	return nil
}

// rawEntityKeys are the keys entities gives the entities of a dump: read from the dump's
// lists rather than from its go-memdb state, whose GetAll copies every entity, because a
// sync needs them before it knows whether anything will be refused. Its kinds are entities'
// kinds: TestRawEntityKeysAreTheKeysOfEntities fails when one list gains a kind the other
// lacks.
func rawEntityKeys(raw *utils.KongRawState) map[string]bool {
	out := map[string]bool{}
	addKeys(out, "license", raw.Licenses, func(e *kong.License) *string { return e.ID })
	addKeys(out, "service", raw.Services, func(e *kong.Service) *string { return e.ID })
	addKeys(out, "route", raw.Routes, func(e *kong.Route) *string { return e.ID })
	addKeys(out, "upstream", raw.Upstreams, func(e *kong.Upstream) *string { return e.ID })
	addKeys(out, "target", raw.Targets, func(e *kong.Target) *string { return e.ID })
	addKeys(out, "certificate", raw.Certificates, func(e *kong.Certificate) *string { return e.ID })
	addKeys(out, "sni", raw.SNIs, func(e *kong.SNI) *string { return e.ID })
	addKeys(out, "plugin", raw.Plugins, func(e *kong.Plugin) *string { return e.ID })
	addKeys(out, "consumer", raw.Consumers, func(e *kong.Consumer) *string { return e.ID })
	for _, g := range raw.ConsumerGroups {
		if g.ConsumerGroup == nil || g.ConsumerGroup.ID == nil {
			continue
		}
		out["consumer-group/"+*g.ConsumerGroup.ID] = true
		for _, c := range g.Consumers {
			if c.ID != nil {
				out[membershipKey(*g.ConsumerGroup.ID, *c.ID)] = true
			}
		}
	}
	addKeys(out, "key-auth", raw.KeyAuths, func(e *kong.KeyAuth) *string { return e.ID })
	addKeys(out, "hmac-auth", raw.HMACAuths, func(e *kong.HMACAuth) *string { return e.ID })
	addKeys(out, "jwt", raw.JWTAuths, func(e *kong.JWTAuth) *string { return e.ID })
	addKeys(out, "basic-auth", raw.BasicAuths, func(e *kong.BasicAuthOptions) *string { return e.ID })
	addKeys(out, "acl", raw.ACLGroups, func(e *kong.ACLGroup) *string { return e.ID })
	addKeys(out, "oauth2", raw.Oauth2Creds, func(e *kong.Oauth2Credential) *string { return e.ID })
	addKeys(out, "mtls-auth", raw.MTLSAuths, func(e *kong.MTLSAuth) *string { return e.ID })
	addKeys(out, "ca-certificate", raw.CACertificates, func(e *kong.CACertificate) *string { return e.ID })
	addKeys(out, "vault", raw.Vaults, func(e *kong.Vault) *string { return e.ID })
	return out
}

// addKeys adds kind/ID to keys for every entity of list that has an ID.
func addKeys[E any](keys map[string]bool, kind string, list []E, id func(E) *string) {
	for _, e := range list {
		if v := id(e); v != nil {
			keys[kind+"/"+*v] = true
		}
	}
}

// objectOf is the object whose k8s-* tags e carries.
func objectOf(e *entity) (kongstate.ObjectRef, bool) {
	return kongstate.ObjectRefFromTags(tagStrings(e.tags))
}

// isolate leaves the entities of the refused objects (keyed by graph node: the objects Kong
// refused and those that depend on them, objgraph.Graph), and the dependents that cannot
// exist without them, out of target and current (see maxPasses for the rules). It returns the
// foreign-key dependents it left out of the target, reported on their own objects, and the
// objects whose entities it left out because they are refused. licenses names the
// KongLicense of each license the target holds (licenseObjects).
//
// heldBefore (nil: every current entity) are the entities Kong held when the sync began: an
// entity of a refused object that an earlier pass of the same sync created is not kept but
// deleted, so that Kong holds for that object what it held before the sync (never a new
// route without the plugin that was refused with it).
func isolate(current, target *state.KongState, refused map[kongstate.ObjectRef]bool, heldBefore map[string]bool, licenses map[string]kongstate.ObjectRef) ([]dataplane.EntityError, []kongstate.ObjectRef, error) {
	if len(refused) == 0 {
		return nil, nil, nil
	}
	cur, err := entities(current, licenses)
	if err != nil {
		return nil, nil, fmt.Errorf("indexing the current entities: %w", err)
	}
	tgt, err := entities(target, licenses)
	if err != nil {
		return nil, nil, fmt.Errorf("indexing the target entities: %w", err)
	}
	matched := map[kongstate.ObjectRef]kongstate.ObjectRef{}
	isRefused := func(e *entity) bool {
		ref, ok := objectOf(e)
		if ok && refused[objgraph.Key(ref)] {
			matched[objgraph.Key(ref)] = ref
			return true
		}
		return false
	}
	drop := map[string]bool{} // left out of the target
	keep := map[string]bool{} // left out of the current state: Kong keeps it as it is
	for k, e := range tgt {
		if isRefused(e) {
			drop[k] = true
		}
	}
	for k, e := range cur {
		if isRefused(e) && (heldBefore == nil || heldBefore[k]) {
			keep[k] = true
		}
	}

	var dependents []dataplane.EntityError
	for changed := true; changed; {
		changed = false
		for k, e := range tgt {
			if drop[k] {
				continue
			}
			for _, p := range e.parents {
				// The parent is gone from the target and Kong does not hold it either.
				if !drop[p] || keep[p] {
					continue
				}
				drop[k], changed = true, true
				if cur[k] != nil && (heldBefore == nil || heldBefore[k]) {
					keep[k] = true
				}
				if ref, ok := objectOf(e); ok && !refused[objgraph.Key(ref)] {
					parent := tgt[p]
					dependents = append(dependents, dataplane.EntityError{
						Object: ref, EntityType: e.kind, EntityName: e.name,
						Message: fmt.Sprintf("left out: its %s %s was refused", parent.kind, parent.name),
					})
				}
				break
			}
		}
		for k, e := range cur {
			if !keep[k] {
				continue
			}
			for _, p := range e.parents {
				// A kept entity's parent that the sync would delete stays too.
				if cur[p] != nil && !keep[p] && (tgt[p] == nil || drop[p]) {
					keep[p], changed = true, true
				}
			}
		}
	}

	for k := range drop {
		if err := tgt[k].remove(target); err != nil {
			return nil, nil, fmt.Errorf("leaving %s out of the target: %w", k, err)
		}
	}
	for k := range keep {
		if err := cur[k].remove(current); err != nil {
			return nil, nil, fmt.Errorf("leaving %s out of the current state: %w", k, err)
		}
	}
	excluded := make([]kongstate.ObjectRef, 0, len(matched))
	for _, r := range matched {
		excluded = append(excluded, r)
	}
	sort.Slice(excluded, func(i, j int) bool { return excluded[i].String() < excluded[j].String() })
	sort.Slice(dependents, func(i, j int) bool {
		a, b := dependents[i], dependents[j]
		if a.EntityType != b.EntityType {
			return a.EntityType < b.EntityType
		}
		return a.EntityName < b.EntityName
	})
	return dependents, excluded, nil
}

// licenseObjects maps the ID of each license of s to its KongLicense: licenses carry no
// tags, so a refused license is traced to its object here.
func licenseObjects(s *kongstate.State) map[string]kongstate.ObjectRef {
	if s == nil {
		return nil
	}
	out := map[string]kongstate.ObjectRef{}
	for _, l := range s.Licenses {
		if l != nil && l.ID != nil {
			out[*l.ID] = l.Object
		}
	}
	return out
}
