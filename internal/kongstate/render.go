package kongstate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

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
// Services and upstreams are written by encode.go's encoder (encoding/json's bytes, directly
// in either form); the rest of the body by encoding/json.
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

// rendered is a list of the last body's entities, in the State's order, with their names
// and bytes, and their order in the body (descending names) as indexes into that list: nil
// when two had the same name (their order then follows the State's, which may change).
type rendered[E any] struct {
	entities []*E
	names    []string
	bytes    [][]byte
	order    []int32
}

// maxInserted is how many new entities a body's order takes by insertion into the previous
// one's before the whole list is sorted again instead.
const maxInserted = 64

// reuseWindow is how far past the expected position an entity of the new State is looked for
// among the previous one's: a round changes a few entities, which shift the others by a few.
const reuseWindow = 16

// The placeholder service and upstream whose bytes in the body's skeleton are replaced by
// the rendered entities. Their names cannot be Kubernetes-derived ones (those have no spaces).
var (
	markerService  = file.FService{Service: kong.Service{Name: kong.String("konductor placeholder service")}}
	markerUpstream = file.FUpstream{Upstream: kong.Upstream{Name: kong.String("konductor placeholder upstream")}}
)

// renderPlan is a list's entities as the next body holds them: those of the previous body
// that are the same pointer with their bytes (found by walking both lists in order, which is
// a State's stable order), the others to render (fresh), and where each came from.
type renderPlan[E any] struct {
	prev  rendered[E]
	next  rendered[E]
	from  []int32 // the index in prev of each entity re-used, -1 for a new one
	fresh []int   // the indexes in next of the entities to render
}

// planRender is the renderPlan of list after prev.
func planRender[E any](prev rendered[E], list []*E, name func(*E) string) *renderPlan[E] {
	p := &renderPlan[E]{prev: prev, next: rendered[E]{entities: make([]*E, 0, len(list)), names: make([]string, 0, len(list)), bytes: make([][]byte, 0, len(list))},
		from: make([]int32, 0, len(list))}
	j := 0
	for _, e := range list {
		if e == nil {
			continue
		}
		at := int32(-1)
		for k := j; k < len(prev.entities) && k <= j+reuseWindow; k++ {
			if prev.entities[k] == e {
				at, j = int32(k), k+1
				break
			}
		}
		if at >= 0 {
			p.next.names = append(p.next.names, prev.names[at])
			p.next.bytes = append(p.next.bytes, prev.bytes[at])
		} else {
			p.fresh = append(p.fresh, len(p.next.entities))
			p.next.names = append(p.next.names, name(e))
			p.next.bytes = append(p.next.bytes, nil)
		}
		p.next.entities = append(p.next.entities, e)
		p.from = append(p.from, at)
	}
	return p
}

// jobs are the renders of the plan's fresh entities, in parts (renderJobs).
func (p *renderPlan[E]) jobs(render func(*E) ([]byte, error)) []func() error {
	return renderJobs(p.fresh, p.next.entities, p.next.bytes, render)
}

// done is the entities' bytes in the body's order (bodyOrder) once every job ran, and the
// list as rendered. Each entity's bytes start with the comma that separates it from the one
// before (splice drops the first's), so that a body is made of the cached bytes alone.
func (p *renderPlan[E]) done() ([][]byte, rendered[E]) {
	order, unique := bodyOrder(p.prev.order, len(p.prev.entities), p.from, p.next.names)
	if unique {
		p.next.order = order
	}
	out := make([][]byte, len(order))
	for i, k := range order {
		out[i] = p.next.bytes[k]
	}
	return out, p.next
}

// parallelRenderMin is how many entities to render make it worth spreading them over the
// cores: the first body (3,000 services and upstreams at 3,000 Ingresses) or a round that
// translated everything again, not a round's few changed entities.
const parallelRenderMin = 256

// renderChunk is how many entities one job renders: small enough that the cores finish
// together (services cost about three times upstreams), large enough that taking a job costs
// nothing next to it.
const renderChunk = 64

// renderJobs are jobs that set out[k] to render(entities[k]) for each k of todo, each for a
// contiguous part of todo; a job stops at its first entity that fails and returns its error.
func renderJobs[E any](todo []int, entities []*E, out [][]byte, render func(*E) ([]byte, error)) []func() error {
	jobs := make([]func() error, 0, (len(todo)+renderChunk-1)/renderChunk)
	for from := 0; from < len(todo); from += renderChunk {
		part := todo[from:min(from+renderChunk, len(todo))]
		jobs = append(jobs, func() error {
			for _, k := range part {
				b, err := render(entities[k])
				if err != nil {
					return err
				}
				out[k] = b
			}
			return nil
		})
	}
	return jobs
}

// runJobs runs jobs, on every core (GOMAXPROCS) when spread is set, each core taking the
// next job as it finishes one, the caller's goroutine one of them; it returns the error of the
// first job in jobs' order that failed, as running them one after the other would (the jobs
// after a failed one may have run).
func runJobs(jobs []func() error, spread bool) error {
	workers := min(runtime.GOMAXPROCS(0), len(jobs))
	if !spread || workers < 2 {
		for _, job := range jobs {
			if err := job(); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, len(jobs))
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= len(jobs) {
				return
			}
			errs[i] = jobs[i]()
		}
	}
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// renderEach sets out[k] to render(entities[k]) for each k of todo, on every core when there
// are many (runJobs): out holds the same bytes in the same places whatever the split. The
// error is that of the first entity in todo's order that failed, as rendering them one after
// the other would return.
func renderEach[E any](todo []int, entities []*E, out [][]byte, render func(*E) ([]byte, error)) error {
	return runJobs(renderJobs(todo, entities, out, render), len(todo) >= parallelRenderMin)
}

// bodyOrder is the order of names in the body (indexes, by name descending, stable), and
// whether no two names are equal. It is derived from the previous list's order (prevOrder
// over prevLen entities, nil when unknown; from maps each entity to its index there, -1 for a
// new one) when that is known and few entities are new: those that stay keep their order (the
// same entity has the same name), and each new one is inserted where its name goes.
// Otherwise it sorts.
func bodyOrder(prevOrder []int32, prevLen int, from []int32, names []string) ([]int32, bool) {
	var fresh []int32
	for k, f := range from {
		if f < 0 {
			if fresh = append(fresh, int32(k)); len(fresh) > maxInserted {
				break
			}
		}
	}
	if prevOrder == nil || len(fresh) > maxInserted {
		order := sortedByNameDesc(names)
		for i := 1; i < len(order); i++ {
			if names[order[i-1]] == names[order[i]] {
				return order, false
			}
		}
		return order, true
	}
	nextOf := make([]int32, prevLen)
	for i := range nextOf {
		nextOf[i] = -1
	}
	for k, f := range from {
		if f >= 0 {
			nextOf[f] = int32(k)
		}
	}
	order := make([]int32, 0, len(names))
	for _, p := range prevOrder {
		if k := nextOf[p]; k >= 0 {
			order = append(order, k)
		}
	}
	for _, k := range fresh {
		n := names[k]
		at, _ := slices.BinarySearchFunc(order, n, func(o int32, n string) int { return strings.Compare(n, names[o]) })
		if at < len(order) && names[order[at]] == n {
			return bodyOrder(nil, 0, from, names) // a name twice: sorted
		}
		order = slices.Insert(order, at, k)
	}
	return order, true
}

// DeclarativeConfig is s.DeclarativeConfig(), re-using the bytes of the entities it rendered
// for the previous body.
func (r *Renderer) DeclarativeConfig(s *State) ([]byte, error) {
	b, err := r.render(s, &r.plain, false, "", "")
	return b.Bytes(), err
}

// QuotedDeclarativeConfig is prefix, then s.DeclarativeConfig() escaped as the content of a
// JSON string (AppendJSONStringContent), then suffix: a body such as {"config":"..."}
// without a copy of the configuration. It re-uses the escaped bytes of the entities it
// rendered for the previous body, which the Body's pieces share.
func (r *Renderer) QuotedDeclarativeConfig(s *State, prefix, suffix string) (Body, error) {
	return r.render(s, &r.quoted, true, prefix, suffix)
}

// QuotedBody is prefix, config escaped as the content of a JSON string, then suffix.
func QuotedBody(config []byte, prefix, suffix string) []byte {
	out := make([]byte, 0, len(prefix)+len(config)+len(config)/4+len(suffix))
	out = AppendJSONStringContent(append(out, prefix...), config)
	return append(out, suffix...)
}

func (r *Renderer) render(s *State, cache *renderCache, quote bool, prefix, suffix string) (Body, error) {
	whole := func() (Body, error) {
		b, err := s.DeclarativeConfig()
		if err != nil || !quote {
			return BodyOf(b), err
		}
		return BodyOf(QuotedBody(b, prefix, suffix)), nil
	}
	if s == nil || len(s.Services) == 0 || len(s.Upstreams) == 0 || len(s.CustomEntities) > 0 || len(s.CertificateAlts) > 0 {
		// Custom entities and alternative certificates are spliced into the body by
		// DeclarativeConfig itself.
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
	svcPlan := planRender(cache.services, s.Services, func(svc *file.FService) string { return str(svc.Name) })
	upPlan := planRender(cache.upstreams, s.Upstreams, func(u *file.FUpstream) string { return str(u.Name) })

	// The rest of the body, with one placeholder service and upstream: rendered with the
	// entities, as one more job (its error counts after theirs, as when it came after them).
	var skeleton []byte
	markers := make([][]byte, 2)
	var skeletonErr error
	renderSkeleton := func() error {
		rest := *s
		rest.Services, rest.Upstreams = nil, nil
		c := rest.Content()
		c.Services, c.Upstreams = []file.FService{markerService}, []file.FUpstream{markerUpstream}
		if skeleton, skeletonErr = marshal(dbless(c, true)); skeletonErr != nil {
			return nil
		}
		for i, m := range []any{markerService, markerUpstream} {
			if markers[i], skeletonErr = marshal(m); skeletonErr != nil {
				return nil
			}
		}
		return nil
	}
	// The services' and upstreams' renders in one set of jobs: the cores take them as they
	// finish, so that none waits for another at the end of the services, nor of the body.
	jobs := append([]func() error{renderSkeleton},
		svcPlan.jobs(func(svc *file.FService) ([]byte, error) { return renderEntity(svc, quote, appendService) })...)
	jobs = append(jobs, upPlan.jobs(func(u *file.FUpstream) ([]byte, error) { return renderEntity(u, quote, appendUpstream) })...)
	if err := runJobs(jobs, len(svcPlan.fresh)+len(upPlan.fresh) >= parallelRenderMin); err != nil {
		return Body{}, err
	}
	svcs, services := svcPlan.done()
	ups, upstreams := upPlan.done()
	cache.services, cache.upstreams = services, upstreams
	if len(svcs) == 0 || len(ups) == 0 {
		return whole()
	}
	if skeletonErr != nil {
		return Body{}, skeletonErr
	}
	// Escaping maps each byte on its own, and a placeholder starts with '{', which no
	// escape sequence holds: the escaped placeholder is found where the placeholder was.
	return splice(prefix, skeleton, suffix, markers, [][][]byte{svcs, ups})
}

// scratch holds the buffers entities are rendered into before their bytes are copied out at
// their size: the Renderer keeps each entity's bytes for as long as the entity lives, and
// the capacity appends leave past the end would be kept with them.
var scratch = sync.Pool{New: func() any { return new([]byte) }}

// renderEntity is e's bytes as appendEntity renders them (escaped as the content of a JSON
// string when quote is set), with the comma that precedes an entity in a list (renderAll).
func renderEntity[E any](e *E, quote bool, appendEntity func([]byte, *E, bool) ([]byte, error)) ([]byte, error) {
	buf := scratch.Get().(*[]byte)
	defer scratch.Put(buf)
	b, err := appendEntity(append((*buf)[:0], ','), e, quote)
	if err != nil {
		return nil, err
	}
	*buf = b
	return slices.Clone(b), nil
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
	// Grown once to the size it will have: appended to a short slice (a rendered entity's
	// leading comma), appends would double its capacity, and the Renderer keeps these bytes
	// (17.5 MB at 10,000 Ingresses, of which a few MB were unused capacity).
	// Counted by bytes.Count, whose assembly reads many bytes at a time (a loop over the bytes
	// was a third of the escaping's CPU in the first round, issue #13): the quotes and
	// backslashes, which JSON has plenty of, and not the control bytes, which a body rendered
	// by encoding/json never holds raw (any there make an append grow dst once more).
	grow := len(b) + bytes.Count(b, []byte{'"'}) + bytes.Count(b, []byte{'\\'})
	dst = slices.Grow(dst, grow)
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

// sortedByNameDesc is the indexes of names in Content's order: by name, descending, stable
// (equal names in the order of the list). Names are usually unique (and a translated State's
// services come in ascending order), so it first tries what is cheaper than sorting.
func sortedByNameDesc(names []string) []int32 {
	order := make([]int32, len(names))
	for i := range order {
		order[i] = int32(i)
	}
	ascending, descending := true, true
	for i := 1; i < len(names); i++ {
		ascending = ascending && names[i-1] < names[i]
		descending = descending && names[i-1] > names[i]
	}
	switch {
	case descending:
	case ascending:
		slices.Reverse(order)
	default:
		// The index breaks ties: the order is total, so an unstable sort gives the stable one.
		slices.SortFunc(order, func(a, b int32) int {
			if c := strings.Compare(names[b], names[a]); c != 0 {
				return c
			}
			return int(a - b)
		})
	}
	return order
}

// splice is prefix, then skeleton with each marker's bytes (in the order given, each found
// once) replaced by its entities (each with its leading comma, but the first), then suffix:
// as a Body whose pieces are the entities' own bytes.
func splice(prefix string, skeleton []byte, suffix string, markers [][]byte, entities [][][]byte) (Body, error) {
	type cut struct{ at, end int }
	cuts := make([]cut, len(markers))
	size, count, from := len(prefix)+len(skeleton)+len(suffix), 3+len(markers), 0
	for k, m := range markers {
		i := bytes.Index(skeleton[from:], m)
		if i < 0 || bytes.Contains(skeleton[from+i+len(m):], m) {
			return Body{}, fmt.Errorf("rendering: placeholder %s not found once in the configuration", m)
		}
		cuts[k] = cut{from + i, from + i + len(m)}
		from = cuts[k].end
		size -= len(m)
		count += len(entities[k])
		for n, e := range entities[k] {
			if n == 0 {
				e = e[1:]
			}
			size += len(e)
		}
	}
	pieces := make([][]byte, 0, count)
	pieces = append(pieces, []byte(prefix))
	prev := 0
	for k, c := range cuts {
		pieces = append(pieces, skeleton[prev:c.at])
		for n, e := range entities[k] {
			if n == 0 {
				e = e[1:] // no comma before the first
			}
			pieces = append(pieces, e)
		}
		prev = c.end
	}
	pieces = append(pieces, skeleton[prev:], []byte(suffix))
	return Body{pieces: pieces, size: size}, nil
}
