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
// It renders the body as it is (DeclarativeConfig) or as the content of a JSON string
// (QuotedDeclarativeConfig, what a DB-less Kong is sent), each with its own cache of entity
// bytes, so that neither form is derived from the other by a pass over megabytes each round.
//
// A Renderer may be used by several goroutines (one at a time); each cache is that of the
// body of its form rendered last.
type Renderer struct {
	mu     sync.Mutex
	plain  renderCache
	quoted renderCache
}

// renderCache is the rendered entities of one form of the last body.
type renderCache struct {
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
	return r.render(s, &r.plain, false, "", "")
}

// QuotedDeclarativeConfig is prefix, then s.DeclarativeConfig() escaped as the content of a
// JSON string (AppendJSONStringContent), then suffix, in one slice: a body such as
// {"config":"..."} without a copy of the configuration. It re-uses the escaped bytes of the
// entities it rendered for the previous body.
func (r *Renderer) QuotedDeclarativeConfig(s *State, prefix, suffix string) ([]byte, error) {
	return r.render(s, &r.quoted, true, prefix, suffix)
}

// QuotedBody is prefix, config escaped as the content of a JSON string, then suffix.
func QuotedBody(config []byte, prefix, suffix string) []byte {
	out := make([]byte, 0, len(prefix)+len(config)+len(config)/4+len(suffix))
	out = AppendJSONStringContent(append(out, prefix...), config)
	return append(out, suffix...)
}

func (r *Renderer) render(s *State, cache *renderCache, quote bool, prefix, suffix string) ([]byte, error) {
	whole := func() ([]byte, error) {
		b, err := s.DeclarativeConfig()
		if err != nil || !quote {
			return b, err
		}
		return QuotedBody(b, prefix, suffix), nil
	}
	if s == nil || len(s.Services) == 0 || len(s.Upstreams) == 0 || len(s.CustomEntities) > 0 {
		// Custom entities are spliced into the body by DeclarativeConfig itself.
		return whole()
	}
	marshal := func(v any) ([]byte, error) {
		b, err := json.Marshal(v)
		if err != nil || !quote {
			return b, err
		}
		return AppendJSONStringContent(nil, b), nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	svcs, services, err := renderAll(cache.services, s.Services, func(svc *file.FService) string { return str(svc.Name) },
		func(svc *file.FService) ([]byte, error) { return marshal(renderService(svc)) })
	if err != nil {
		return nil, err
	}
	ups, upstreams, err := renderAll(cache.upstreams, s.Upstreams, func(u *file.FUpstream) string { return str(u.Name) },
		func(u *file.FUpstream) ([]byte, error) { return marshal(renderUpstream(u)) })
	if err != nil {
		return nil, err
	}
	cache.services, cache.upstreams = services, upstreams
	if len(svcs) == 0 || len(ups) == 0 {
		return whole()
	}
	sortByNameDesc(svcs)
	sortByNameDesc(ups)

	// The rest of the body, with one placeholder service and upstream.
	rest := *s
	rest.Services, rest.Upstreams = nil, nil
	c := rest.Content()
	c.Services, c.Upstreams = []file.FService{markerService}, []file.FUpstream{markerUpstream}
	skeleton, err := marshal(dbless(c, true))
	if err != nil {
		return nil, err
	}
	markers := make([][]byte, 2)
	for i, m := range []any{markerService, markerUpstream} {
		if markers[i], err = marshal(m); err != nil {
			return nil, err
		}
	}
	// Escaping maps each byte on its own, and a placeholder starts with '{', which no
	// escape sequence holds: the escaped placeholder is found where the placeholder was.
	return splice(prefix, skeleton, suffix, markers, [][]renderedEntity{svcs, ups})
}

// AppendJSONStringContent appends b to dst escaped as the content of a JSON string (between
// its quotes): what encoding/json gives for a string, without its cost. encoding/json escapes
// every byte of a multi-megabyte configuration through its generic string encoder (and also
// escapes <, > and &, which JSON does not need); only the quote, the backslash and control
// bytes must be escaped, and valid UTF-8, which is all a rendered configuration holds, passes
// as it is. An invalid UTF-8 byte also passes as it is; a JSON decoder then refuses the
// string rather than reading a replaced character.
func AppendJSONStringContent(dst, b []byte) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i, c := range b {
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, b[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	return append(dst, b[start:]...)
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

// splice is prefix, then skeleton with each marker's bytes (in the order given, each found
// once) replaced by its entities, comma-separated, then suffix.
func splice(prefix string, skeleton []byte, suffix string, markers [][]byte, entities [][]renderedEntity) ([]byte, error) {
	type cut struct{ at, end int }
	cuts := make([]cut, len(markers))
	size, from := len(prefix)+len(skeleton)+len(suffix), 0
	for k, m := range markers {
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
	out = append(out, prefix...)
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
	out = append(out, skeleton[prev:]...)
	return append(out, suffix...), nil
}
