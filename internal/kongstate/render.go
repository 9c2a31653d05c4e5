package kongstate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
)

// Renderer renders DeclarativeConfig bodies, byte for byte what State.DeclarativeConfig
// gives, keeping the rendered bytes of every service and upstream of the last body: a State
// that holds the same *file.FService or *file.FUpstream (translator.Incremental carries the
// entities of unchanged objects over from one State to the next, in the same order) reuses
// them. This is sound because a State is read-only once built: the same pointer always
// renders to the same bytes. Entities are matched by walking the previous and the new lists
// in order, not through a map, so a round costs a pointer comparison per entity. Services and
// upstreams are most of a configuration of Ingresses; the other collections are rendered each
// time.
//
// A Renderer may be used by several goroutines (one at a time); the cache is that of the body
// rendered last.
type Renderer struct {
	mu        sync.Mutex
	services  rendered[file.FService]
	upstreams rendered[file.FUpstream]
}

// rendered is a list of the last body's entities, in the State's order, with their bytes.
type rendered[E any] struct {
	entities []*E
	bytes    [][]byte
}

// reuseWindow is how far past the expected position an entity of the new State is looked for
// among the previous one's: a round changes a few entities, which shift the others by a few.
const reuseWindow = 16

// The placeholder service and upstream whose bytes in the body's skeleton are replaced by
// the rendered entities. Their names cannot be Kubernetes-derived ones (those have no spaces).
var (
	markerService  = file.FService{Service: kong.Service{Name: kong.String("konductor placeholder service")}}
	markerUpstream = file.FUpstream{Upstream: kong.Upstream{Name: kong.String("konductor placeholder upstream")}}
)

type renderedEntity struct {
	name  string
	bytes []byte
}

// renderAll renders every entity of list, re-using the bytes of prev's where the entity is
// the same pointer (found by walking both lists in order, which is a State's stable order),
// and returns them and the list as rendered.
func renderAll[E any](prev rendered[E], list []*E, name func(*E) string, render func(*E) ([]byte, error)) ([]renderedEntity, rendered[E], error) {
	out := make([]renderedEntity, 0, len(list))
	next := rendered[E]{entities: make([]*E, 0, len(list)), bytes: make([][]byte, 0, len(list))}
	j := 0
	for _, e := range list {
		if e == nil {
			continue
		}
		var b []byte
		for k := j; k < len(prev.entities) && k <= j+reuseWindow; k++ {
			if prev.entities[k] == e {
				b, j = prev.bytes[k], k+1
				break
			}
		}
		if b == nil {
			var err error
			if b, err = render(e); err != nil {
				return nil, rendered[E]{}, err
			}
		}
		out = append(out, renderedEntity{name(e), b})
		next.entities = append(next.entities, e)
		next.bytes = append(next.bytes, b)
	}
	return out, next, nil
}

// DeclarativeConfig is s.DeclarativeConfig(), re-using the bytes of the entities it rendered
// for the previous body.
func (r *Renderer) DeclarativeConfig(s *State) ([]byte, error) {
	if s == nil || len(s.Services) == 0 || len(s.Upstreams) == 0 || len(s.CustomEntities) > 0 || len(s.CertificateAlts) > 0 {
		// Custom entities and alternative certificates are spliced into the body by
		// DeclarativeConfig itself.
		return s.DeclarativeConfig()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	svcs, services, err := renderAll(r.services, s.Services, func(svc *file.FService) string { return str(svc.Name) },
		func(svc *file.FService) ([]byte, error) { return json.Marshal(renderService(svc)) })
	if err != nil {
		return nil, err
	}
	ups, upstreams, err := renderAll(r.upstreams, s.Upstreams, func(u *file.FUpstream) string { return str(u.Name) },
		func(u *file.FUpstream) ([]byte, error) { return json.Marshal(renderUpstream(u)) })
	if err != nil {
		return nil, err
	}
	r.services, r.upstreams = services, upstreams
	if len(svcs) == 0 || len(ups) == 0 {
		return s.DeclarativeConfig()
	}
	sortByNameDesc(svcs)
	sortByNameDesc(ups)

	// The rest of the body, with one placeholder service and upstream.
	rest := *s
	rest.Services, rest.Upstreams = nil, nil
	c := rest.Content()
	c.Services, c.Upstreams = []file.FService{markerService}, []file.FUpstream{markerUpstream}
	skeleton, err := json.Marshal(dbless(c, true))
	if err != nil {
		return nil, err
	}
	return splice(skeleton, []any{markerService, markerUpstream}, [][]renderedEntity{svcs, ups})
}

// sortByNameDesc is Content's order: by name, descending, stable. Names are usually unique
// (and a translated State's services come in ascending order), so it first tries what is
// cheaper than a stable sort.
func sortByNameDesc(es []renderedEntity) {
	ascending, descending := true, true
	for i := 1; i < len(es); i++ {
		ascending = ascending && es[i-1].name < es[i].name
		descending = descending && es[i-1].name > es[i].name
	}
	switch {
	case descending:
		return
	case ascending:
		slices.Reverse(es)
		return
	}
	orig := slices.Clone(es)
	slices.SortFunc(es, func(a, b renderedEntity) int { return strings.Compare(b.name, a.name) })
	for i := 1; i < len(es); i++ {
		if es[i-1].name == es[i].name {
			// Equal names keep the State's order, which the unstable sort lost.
			copy(es, orig)
			sort.SliceStable(es, func(i, j int) bool { return es[i].name > es[j].name })
			return
		}
	}
}

// splice replaces the rendering of each marker in skeleton (in the order given) by its
// entities, comma-separated.
func splice(skeleton []byte, markers []any, entities [][]renderedEntity) ([]byte, error) {
	type cut struct{ at, end int }
	cuts := make([]cut, len(markers))
	size, from := len(skeleton), 0
	for k, marker := range markers {
		m, err := json.Marshal(marker)
		if err != nil {
			return nil, err
		}
		i := bytes.Index(skeleton[from:], m)
		if i < 0 || bytes.Contains(skeleton[from+i+len(m):], m) {
			return nil, fmt.Errorf("rendering: placeholder %s not found once in the configuration", m)
		}
		cuts[k] = cut{from + i, from + i + len(m)}
		from = cuts[k].end
		size += len(entities[k]) - len(m)
		for _, e := range entities[k] {
			size += len(e.bytes)
		}
	}
	out := make([]byte, 0, size)
	prev := 0
	for k, c := range cuts {
		out = append(out, skeleton[prev:c.at]...)
		for n, e := range entities[k] {
			if n > 0 {
				out = append(out, ',')
			}
			out = append(out, e.bytes...)
		}
		prev = c.end
	}
	return append(out, skeleton[prev:]...), nil
}
