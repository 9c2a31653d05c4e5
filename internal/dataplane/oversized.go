package dataplane

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"

	"github.com/konductor/konductor/internal/dataplane/dbless"
	"github.com/konductor/konductor/internal/kongrules"
	"github.com/konductor/konductor/internal/kongstate"
)

// A DB-less body over the gateway's Admin API limit is not sent (dbless.BodyTooLarge). When a
// few objects take a large share of it (a tenant's plugin configurations of hundreds of KiB,
// copied into every entity), those objects are named in the refusal, as if Kong had refused
// their entities, so that the fallback configuration leaves them out with their dependents
// and everyone else's changes still reach Kong (issue #44, item 3). When no such objects make
// the body fit, none is named and the gateway keeps what it holds (issue #45).

// minOversizedBytes is the least an object's entities must weigh to be left out for the
// body's size, and the share of the body (1/oversizedShare) as well: many ordinary objects
// are the cluster, not a tenant's excess.
const (
	minOversizedBytes = 64 << 10
	oversizedShare    = 100
)

// oversizedObjects are the refusals naming the largest objects of sent, an over-limit body,
// when leaving out those of at least minOversizedBytes (and 1/oversizedShare of the body)
// brings it under the limit; none otherwise.
func oversizedObjects(sent *kongstate.State, tl *dbless.BodyTooLarge) []EntityError {
	if sent == nil || tl == nil || tl.Size <= tl.Limit {
		return nil
	}
	weights := entityBytesByObject(sent)
	least := max(int64(minOversizedBytes), tl.Size/oversizedShare)
	var heavy []kongstate.ObjectRef
	for ref, n := range weights {
		if n >= least {
			heavy = append(heavy, ref)
		}
	}
	sort.Slice(heavy, func(i, j int) bool {
		if weights[heavy[i]] != weights[heavy[j]] {
			return weights[heavy[i]] > weights[heavy[j]]
		}
		return heavy[i].String() < heavy[j].String()
	})
	excess, freed := tl.Size-tl.Limit, int64(0)
	var out []EntityError
	for _, ref := range heavy {
		if freed > excess {
			break
		}
		freed += weights[ref]
		out = append(out, EntityError{Object: ref, Message: fmt.Sprintf(
			"its Kong entities are %d bytes of a %d-byte configuration over the gateway's %d-byte limit (%s): the largest objects are left out so that the others' changes reach Kong",
			weights[ref], tl.Size, tl.Limit, kongrules.AdminMaxBodySizeEnv)})
	}
	if freed <= excess {
		return nil // leaving them out would not make it fit: the gateway keeps what it holds
	}
	return out
}

// entityBytesByObject is, by the object their tags name, the size of sent's entities as JSON:
// services (their routes apart), routes, plugins, consumers with their credentials,
// certificates, CA certificates, upstreams with their targets, custom entities.
func entityBytesByObject(sent *kongstate.State) map[kongstate.ObjectRef]int64 {
	out := map[kongstate.ObjectRef]int64{}
	add := func(tags []*string, v any) {
		strs := make([]string, len(tags))
		for i, t := range tags {
			strs[i] = kong.StringValue(t)
		}
		ref, ok := kongstate.ObjectRefFromTags(strs)
		if !ok {
			return
		}
		b, err := json.Marshal(v)
		if err == nil {
			out[kongstate.ObjectRef{Group: ref.Group, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}] += int64(len(b))
		}
	}
	for _, s := range sent.Services {
		svc := *s
		svc.Routes = nil
		add(s.Tags, svc)
		for _, r := range s.Routes {
			add(r.Tags, r)
		}
	}
	weighAll(sent.Plugins, func(p *file.FPlugin) []*string { return p.Tags }, add)
	weighAll(sent.Consumers, func(c *file.FConsumer) []*string { return c.Tags }, add)
	weighAll(sent.Certificates, func(c *file.FCertificate) []*string { return c.Tags }, add)
	weighAll(sent.CACertificates, func(c *file.FCACertificate) []*string { return c.Tags }, add)
	weighAll(sent.Upstreams, func(u *file.FUpstream) []*string { return u.Tags }, add)
	for _, e := range sent.CustomEntities {
		if e != nil && e.Object.Name != "" {
			b, err := json.Marshal(e.Fields)
			if err == nil {
				out[kongstate.ObjectRef{Group: e.Object.Group, Kind: e.Object.Kind, Namespace: e.Object.Namespace, Name: e.Object.Name}] += int64(len(b))
			}
		}
	}
	return out
}

// weighAll adds each of items, by its tags.
func weighAll[T any](items []*T, tags func(*T) []*string, add func([]*string, any)) {
	for _, it := range items {
		add(tags(it), it)
	}
}
