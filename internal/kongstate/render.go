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
	"unsafe"

	"github.com/kong/go-database-reconciler/pkg/file"
)

// Renderer renders DeclarativeConfig bodies, byte for byte what State.DeclarativeConfig
// gives, keeping the rendered bytes of every entity of the last body: services, upstreams,
// consumers (with their credentials, and their consumer group memberships), consumer groups,
// top-level plugins, certificates, CA certificates and vaults. A State that holds the same
// *file.FService, *file.FConsumer, ... (translator.Incremental carries the entities of
// unchanged objects over from one State to the next, in the same order) reuses them. This is
// sound because a State is read-only once built: the same pointer always renders to the same
// bytes. Entities are matched by walking the previous and the new lists in order, not through
// a map, so a round costs a pointer comparison per entity. Licenses, rare and few, are
// rendered each time with the body's skeleton.
//
// It renders the body as it is (DeclarativeConfig) or as the content of a JSON string
// (QuotedDeclarativeConfig, what a DB-less Kong is sent), each with its own cache of entity
// bytes, so that neither form is derived from the other by a pass over megabytes each round.
// Services, upstreams and plugins are written by encode.go's encoder (encoding/json's bytes,
// directly in either form); the other entities and the skeleton by encoding/json.
//
// A Renderer may be used by several goroutines (one at a time); each cache is that of the
// body of its form rendered last.
type Renderer struct {
	mu     sync.Mutex
	plain  renderCache
	quoted renderCache
}

// KeptBytes is the size of the entity bytes the renderer keeps for its next body of each
// form (DeclarativeConfig's, QuotedDeclarativeConfig's): what holding a Renderer costs
// (megabytes at 10,000 Ingresses), nothing for a form it has not rendered.
func (r *Renderer) KeptBytes() (plain, quoted int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.plain.keptBytes(), r.quoted.keptBytes()
}

// renderCache is the rendered entities of one form of the last body.
type renderCache struct {
	services       listCache[file.FService, string]
	upstreams      listCache[file.FUpstream, string]
	consumers      listCache[file.FConsumer, consumerKey]
	consumerGroups listCache[file.FConsumerGroupObject, string]
	plugins        listCache[file.FPlugin, string]
	certificates   listCache[file.FCertificate, string]
	caCertificates listCache[file.FCACertificate, string]
	vaults         listCache[file.FVault, string]
}

// listCache is one list of a form's cache: the list as the last body rendered it (last),
// and the arrays that the next body's list is planned into (spare: those of the body before
// the last, cleared) with the round's working arrays (scratch). A body's lists are as long
// as the cluster is large, and a round changes a few of their entities: allocating them anew
// each round was most of what a round allocated at 100,000 Ingresses (issue #45), so each
// round fills the arrays the round before it let go of instead. That is sound because no one
// but the Renderer (under its lock) ever holds them: a Body holds the entities' own bytes
// in runs of its own (bodyRuns), never these arrays.
type listCache[E, K any] struct {
	last    rendered[E, K]
	spare   rendered[E, K]
	scratch listScratch
	runs    bodyRuns
}

// listScratch is a list's working arrays during a round, kept for the next: each entity's
// index in the previous list (from), the entities to render (fresh), the previous index's
// place in the new list (nextOf, bodyOrder's).
type listScratch struct {
	from   []int32
	fresh  []int
	nextOf []int32
}

func (c *listCache[E, K]) keptBytes() int { return c.last.keptBytes() }

// keep makes next the list's last render and prev's arrays, cleared so that they keep
// no entity or bytes alive, the spare ones.
func (c *listCache[E, K]) keep(prev, next rendered[E, K]) {
	clear(prev.entities)
	clear(prev.keys)
	clear(prev.bytes)
	clear(prev.extra)
	c.last, c.spare = next, prev
}

func (c *renderCache) keptBytes() int {
	return c.services.keptBytes() + c.upstreams.keptBytes() + c.consumers.keptBytes() +
		c.consumerGroups.keptBytes() + c.plugins.keptBytes() + c.certificates.keptBytes() +
		c.caCertificates.keptBytes() + c.vaults.keptBytes()
}

// rendered is a list of the last body's entities, in the State's order, with their sort keys
// and bytes, and their order in the body (Content's) as indexes into that list: nil when two
// had equal keys (their order then follows the State's, which may change). extra is what
// an entity adds to another list of the body (a consumer's consumer_group_consumers entries),
// nil when no entity adds any.
type rendered[E, K any] struct {
	entities []*E
	keys     []K
	bytes    [][]byte
	extra    [][]byte
	order    []int32
}

func (l *rendered[E, K]) keptBytes() int {
	n := 0
	for _, b := range l.bytes {
		n += len(b)
	}
	for _, b := range l.extra {
		n += len(b)
	}
	return n
}

// collection is how one list of a State is rendered: each entity's sort key, the order of
// keys in the body (ascending by cmp), and its bytes (render: with the comma that precedes an
// entity in a list; extra, for the entities that add to another list, the same for what they
// add there).
type collection[E, K any] struct {
	key    func(*E) K
	cmp    func(a, b K) int
	render func(e *E, quote bool) (own, extra []byte, err error)
}

// byNameDesc is the order of most of Content's lists: by a name, descending.
func byNameDesc(a, b string) int { return strings.Compare(b, a) }

// maxInserted is how many new entities a body's order takes by insertion into the previous
// one's before the whole list is sorted again instead.
const maxInserted = 64

// reuseWindow is how far past the expected position an entity of the new State is looked for
// among the previous one's: a round changes a few entities, which shift the others by a few.
const reuseWindow = 16

// listRender is one list's part of a body's render: its entities as the body holds them
// (plan: those of the previous body that are the same pointer with their bytes, found
// by walking both lists in order, which is a State's stable order; the others to render),
// the jobs that render the others (jobs), and their bytes in the body's order once the jobs
// ran (done). A body's lists are planned first and their jobs run as one set (runJobs), so
// that the cores take them as they finish instead of waiting for each other at the end of
// each list.
type listRender[E, K any] struct {
	c     collection[E, K]
	quote bool
	cache *listCache[E, K]
	prev  rendered[E, K]
	next  rendered[E, K]
	from  []int32 // the index in prev of each entity re-used, -1 for a new one
	fresh []int   // the indexes in next of the entities to render

	extraMu sync.Mutex // next.extra, made by the first entity that adds to another list
}

// plan makes l the listRender of list after cache's last, in cache's spare arrays.
func (l *listRender[E, K]) plan(cache *listCache[E, K], list []*E, c collection[E, K], quote bool) {
	prev, spare := cache.last, cache.spare
	l.c, l.quote, l.cache, l.prev = c, quote, cache, prev
	l.from, l.fresh = slices.Grow(cache.scratch.from[:0], len(list)), cache.scratch.fresh[:0]
	l.next = rendered[E, K]{entities: slices.Grow(spare.entities[:0], len(list)),
		keys: slices.Grow(spare.keys[:0], len(list)), bytes: slices.Grow(spare.bytes[:0], len(list))}
	next := &l.next
	if prev.extra != nil {
		next.extra = slices.Grow(spare.extra[:0], len(list))
	}
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
			next.keys = append(next.keys, prev.keys[at])
			next.bytes = append(next.bytes, prev.bytes[at])
		} else {
			l.fresh = append(l.fresh, len(next.entities))
			next.keys = append(next.keys, c.key(e))
			next.bytes = append(next.bytes, nil)
		}
		if next.extra != nil {
			var x []byte
			if at >= 0 {
				x = prev.extra[at]
			}
			next.extra = append(next.extra, x)
		}
		next.entities = append(next.entities, e)
		l.from = append(l.from, at)
	}
}

// jobs are the renders of the list's fresh entities, renderChunk each (renderJobs).
func (l *listRender[E, K]) jobs() []func() error {
	if len(l.fresh) == 0 {
		return nil
	}
	return renderJobs(l.fresh, l.renderOne)
}

// renderOne renders the k-th entity of next into its place.
func (l *listRender[E, K]) renderOne(k int) error {
	b, x, err := l.c.render(l.next.entities[k], l.quote)
	if err != nil {
		return err
	}
	l.next.bytes[k] = b
	if x != nil {
		l.extraMu.Lock()
		if l.next.extra == nil {
			l.next.extra = make([][]byte, len(l.next.entities))
		}
		l.next.extra[k] = x
		l.extraMu.Unlock()
	}
	return nil
}

// done is, once every job ran, the entities' bytes in the body's order (bodyOrder), what
// they add to another list in the same order (the entities that add nothing left out), and
// the list as rendered. Each entity's bytes start with the comma that separates it from the
// one before (splice drops the first's), so that a body is made of the cached bytes alone.
// The list as rendered becomes the cache's last, and the previous one's arrays its spare
// ones. The bytes are given as the body's runs of them (bodyRuns.cut).
func (l *listRender[E, K]) done() (runs [][][]byte, extra [][]byte) {
	next, scratch := l.next, &l.cache.scratch
	order, unique := bodyOrder(l.cache.spare.order[:0], &scratch.nextOf, l.prev.order, len(l.prev.entities), l.from, next.keys, l.c.cmp)
	if unique {
		next.order = order
	}
	if next.extra != nil {
		for _, k := range order {
			if next.extra[k] != nil {
				extra = append(extra, next.extra[k])
			}
		}
	}
	runs = l.cache.runs.cut(order, next.bytes)
	scratch.from, scratch.fresh = l.from, l.fresh
	l.cache.keep(l.prev, next)
	return runs, extra
}

// runLength is about how many entities a run of a list's bytes in a Body holds
// (bodyRuns.cut): a Body costs a slice header per run, and a round that changes an
// entity makes its run again.
const runLength = 1 << runBits

const runBits = 7

// bodyRuns are the runs a list's bytes were cut into in the last body, by the address of
// their last entity's bytes, and the map the next body's are put in (spare, empty).
type bodyRuns struct {
	last, spare map[*byte][][]byte
}

// cut is a list's bytes (all, each with its leading comma) in the body's order (order,
// indexes into all) as the Body's runs of them, the first without its comma: cut after each
// entity whose bytes' address hashes to a cut (one in runLength), so that where an entity is
// added, replaced or removed changes only the run that holds it. A run of the same pieces as
// one of the last body's is that run, shared with the Bodies handed out (which never write
// to it); only the others are allocated.
func (r *bodyRuns) cut(order []int32, all [][]byte) [][][]byte {
	if r.spare == nil {
		r.spare = map[*byte][][]byte{}
	}
	var runs [][][]byte
	start := 0
	for i, k := range order {
		at := unsafe.SliceData(all[k])
		if i < len(order)-1 && (uint64(uintptr(unsafe.Pointer(at)))*0x9e3779b97f4a7c15)>>(64-runBits) != 0 {
			continue
		}
		from := order[start : i+1]
		run, ok := r.last[at]
		if !ok || !sameRun(run, from, all, start == 0) {
			run = make([][]byte, len(from))
			for j, k := range from {
				run[j] = all[k]
			}
			if start == 0 {
				run[0] = run[0][1:] // no comma before the first
			}
		}
		r.spare[at] = run
		runs = append(runs, run)
		start = i + 1
	}
	clear(r.last)
	r.last, r.spare = r.spare, r.last
	return runs
}

// sameRun reports whether run holds the pieces of all that from indexes (the first
// without its comma when first is set).
func sameRun(run [][]byte, from []int32, all [][]byte, first bool) bool {
	if len(run) != len(from) {
		return false
	}
	for j, k := range from {
		e := all[k]
		if j == 0 && first {
			e = e[1:]
		}
		if len(run[j]) != len(e) || unsafe.SliceData(run[j]) != unsafe.SliceData(e) {
			return false
		}
	}
	return true
}

// parallelRenderMin is how many entities to render make it worth spreading them over the
// cores: the first body (3,000 services and upstreams at 3,000 Ingresses) or a round that
// translated everything again, not a round's few changed entities.
const parallelRenderMin = 256

// renderChunk is how many entities one job renders: small enough that the cores finish
// together (a service costs about three times an upstream), large enough that taking a job
// costs nothing next to it.
const renderChunk = 64

// renderJobs are jobs that call render(k) for each k of todo, each for a contiguous part of
// todo; a job stops at its first entity that fails and returns its error.
func renderJobs(todo []int, render func(k int) error) []func() error {
	jobs := make([]func() error, 0, (len(todo)+renderChunk-1)/renderChunk)
	for from := 0; from < len(todo); from += renderChunk {
		part := todo[from:min(from+renderChunk, len(todo))]
		jobs = append(jobs, func() error {
			for _, k := range part {
				if err := render(k); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return jobs
}

// runJobs runs jobs, on every core (GOMAXPROCS) when spread is set, each core taking the
// next job as it finishes one, the caller's goroutine one of them (a new goroutine may wait
// milliseconds for its thread on a loaded machine). It returns the error of the first job in
// jobs' order that failed, as running them one after the other would (the jobs after a
// failed one may have run).
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

// renderEach calls render(k) for each k of todo, which renders the k-th entity into its
// place. Each entity renders on its own (render reads only its entity), so with many to
// render they are rendered on every core (runJobs): the same bytes land in the same places
// whatever the split. The error is that of the first entity in todo's order that failed, as
// rendering them one after the other would return.
func renderEach(todo []int, render func(k int) error) error {
	return runJobs(renderJobs(todo, render), len(todo) >= parallelRenderMin)
}

// bodyOrder is the order of keys in the body (indexes, ascending by cmp, stable), and
// whether no two keys are equal. It is derived from the previous list's order (prevOrder
// over prevLen entities, nil when unknown; from maps each entity to its index there, -1 for a
// new one) when that is known and few entities are new: those that stay keep their order (the
// same entity has the same key), and each new one is inserted where its key goes.
// Otherwise it sorts. The order is made in dst's array (grown when short), and nextOf's
// (the previous entities' places in the new list) is kept for the next call.
func bodyOrder[K any](dst []int32, nextOf *[]int32, prevOrder []int32, prevLen int, from []int32, keys []K, cmp func(a, b K) int) ([]int32, bool) {
	var fresh []int32
	for k, f := range from {
		if f < 0 {
			if fresh = append(fresh, int32(k)); len(fresh) > maxInserted {
				break
			}
		}
	}
	if prevOrder == nil || len(fresh) > maxInserted {
		order := sortedBy(dst, keys, cmp)
		for i := 1; i < len(order); i++ {
			if cmp(keys[order[i-1]], keys[order[i]]) == 0 {
				return order, false
			}
		}
		return order, true
	}
	places := slices.Grow((*nextOf)[:0], prevLen)[:prevLen]
	*nextOf = places
	for i := range places {
		places[i] = -1
	}
	for k, f := range from {
		if f >= 0 {
			places[f] = int32(k)
		}
	}
	order := slices.Grow(dst[:0], len(keys))
	for _, p := range prevOrder {
		if k := places[p]; k >= 0 {
			order = append(order, k)
		}
	}
	for _, k := range fresh {
		key := keys[k]
		at, _ := slices.BinarySearchFunc(order, key, func(o int32, key K) int { return cmp(keys[o], key) })
		if at < len(order) && cmp(keys[order[at]], key) == 0 {
			return bodyOrder(order, nextOf, nil, 0, from, keys, cmp) // a key twice: sorted
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

// QuotedDeclarativeConfig is prefix, then s.DBLessConfig() escaped as the content of a
// JSON string (AppendJSONStringContent), then suffix: a body such as {"config":"..."}
// without a copy of the configuration. It is the body a DB-less Kong is sent: without the
// fields Kong fills with the value they hold (kongdefaults.go), unlike DeclarativeConfig. It re-uses the escaped bytes of the entities it
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
		if !quote {
			b, err := s.DeclarativeConfig()
			return BodyOf(b), err
		}
		b, err := s.DBLessConfig()
		if err != nil {
			return Body{}, err
		}
		return BodyOf(QuotedBody(b, prefix, suffix)), nil
	}
	if s == nil || len(s.CustomEntities) > 0 || len(s.CertificateAlts) > 0 {
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

	// Each list's entities, and a placeholder in the body's skeleton where they go (none
	// for an empty list, which the body leaves out).
	rest := *s
	rest.Services, rest.Upstreams, rest.Consumers, rest.ConsumerGroups = nil, nil, nil, nil
	rest.Plugins, rest.Certificates, rest.CACertificates, rest.Vaults = nil, nil, nil, nil
	c := rest.Content()
	var p placement
	services := place(&p, &cache.services, s.Services, serviceCollection, quote, markerService, &c.Services)
	upstreams := place(&p, &cache.upstreams, s.Upstreams, upstreamCollection, quote, markerUpstream, &c.Upstreams)
	consumers := place(&p, &cache.consumers, s.Consumers, consumerCollection, quote, markerConsumer, &c.Consumers)
	consumerGroups := place(&p, &cache.consumerGroups, s.ConsumerGroups, consumerGroupCollection, quote, markerConsumerGroup, &c.ConsumerGroups)
	plugins := place(&p, &cache.plugins, s.Plugins, pluginCollection, quote, markerPlugin, &c.Plugins)
	certificates := place(&p, &cache.certificates, s.Certificates, certificateCollection, quote, markerCertificate, &c.Certificates)
	caCertificates := place(&p, &cache.caCertificates, s.CACertificates, caCertificateCollection, quote, markerCACertificate, &c.CACertificates)
	vaults := place(&p, &cache.vaults, s.Vaults, vaultCollection, quote, markerVault, &c.Vaults)

	// The rest of the body, with the placeholders, rendered beside the entities as one more
	// job (the first taken; its error counts after theirs, as when it came after them). The
	// consumers add to consumer_group_consumers when one of them is in a group (their
	// render's extra): known before they render.
	withMemberships := slices.ContainsFunc(s.Consumers, func(c *file.FConsumer) bool { return c != nil && len(c.Groups) > 0 })
	var skeleton []byte
	var placeholders [][]byte
	var skeletonErr error
	renderSkeleton := func() error {
		if len(p.markers) == 0 {
			return nil // nothing but licenses, or an empty configuration: whole() below
		}
		body := dbless(c, true)
		markers := p.markers
		if withMemberships {
			markers = append(slices.Clip(markers), markerMembership)
			body.ConsumerGroupConsumers = []consumerGroupConsumer{markerMembership}
		}
		if skeleton, skeletonErr = marshal(body); skeletonErr != nil {
			return nil
		}
		placeholders = make([][]byte, len(markers))
		for i, m := range markers {
			if placeholders[i], skeletonErr = marshal(m); skeletonErr != nil {
				return nil
			}
		}
		return nil
	}
	// Every list's renders and the skeleton in one set of jobs: the cores take them as they
	// finish, so that none waits for the other at the end of a list, nor of the body.
	jobs := []func() error{renderSkeleton}
	jobs = append(jobs, p.jobs...)
	if err := runJobs(jobs, p.fresh >= parallelRenderMin); err != nil {
		return Body{}, err
	}
	services.done(&p)
	upstreams.done(&p)
	consumers.done(&p)
	consumerGroups.done(&p)
	plugins.done(&p)
	certificates.done(&p)
	caCertificates.done(&p)
	vaults.done(&p)
	if len(p.markers) == 0 {
		return whole()
	}
	if skeletonErr != nil {
		return Body{}, skeletonErr
	}
	if memberships := consumers.extra; len(memberships) > 0 != withMemberships {
		return whole() // a consumer's render added to another list unforeseen: not spliced
	} else if withMemberships {
		memberships[0] = memberships[0][1:] // no comma before the first; made this round
		p.entities = append(p.entities, [][][]byte{memberships})
	}
	// Escaping maps each byte on its own, and a placeholder starts with '{', which no
	// escape sequence holds: the escaped placeholder is found where the placeholder was.
	return splice(prefix, skeleton, suffix, placeholders, p.entities)
}

// placement is a body's render: the placeholders of its skeleton, the entities that replace
// each (filled in once the jobs ran), the jobs that render the entities, and how many
// entities they render.
type placement struct {
	markers  []any
	entities [][][][]byte // each list's runs (bodyRuns.cut)
	jobs     []func() error
	fresh    int
}

// placed is one list of a body being rendered (place).
type placed[E, K any] struct {
	render listRender[E, K]
	at     int      // its placeholder's index in the placement's, -1 for none
	extra  [][]byte // once done: what its entities add to another list
}

// place plans the render of list (listRender.plan, with cache's bytes) and adds its jobs to p;
// when it holds any entity, it sets the skeleton's list (field) to the placeholder marker,
// which p notes. done takes the entities' bytes once the jobs ran.
func place[E, K any](p *placement, cache *listCache[E, K], list []*E, c collection[E, K], quote bool, marker E, field *[]E) *placed[E, K] {
	out := &placed[E, K]{at: -1}
	l := &out.render
	l.plan(cache, list, c, quote)
	p.jobs = append(p.jobs, l.jobs()...)
	p.fresh += len(l.fresh)
	if len(l.next.entities) > 0 {
		out.at = len(p.markers)
		p.markers, p.entities = append(p.markers, marker), append(p.entities, nil)
		*field = []E{marker}
	}
	return out
}

// done puts the list's bytes in its place in p, keeps what they add to another list, and
// makes the list as rendered its cache's, that of the next body.
func (pl *placed[E, K]) done(p *placement) {
	runs, extra := pl.render.done()
	if pl.at >= 0 {
		p.entities[pl.at] = runs
	}
	pl.extra = extra
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

// renderJSON is encoding/json's bytes for v as renderEntity gives an entity's: with the
// comma before it, escaped as the content of a JSON string when quote is set (an element
// of a list is encoded as json.Marshal encodes it alone).
func renderJSON(v any, quote bool) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if quote {
		return AppendJSONStringContent([]byte{','}, b), nil
	}
	return append(append(make([]byte, 0, len(b)+1), ','), b...), nil
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

// sortedBy is the indexes of keys in Content's order: ascending by cmp, stable (equal keys in
// the order of the list). Keys are usually unique (and a translated State's services come in
// ascending order of names, the reverse of the body's), so it first tries what is cheaper
// than sorting. The indexes are written in dst's array (grown when short).
func sortedBy[K any](dst []int32, keys []K, cmp func(a, b K) int) []int32 {
	order := slices.Grow(dst[:0], len(keys))[:len(keys)]
	for i := range order {
		order[i] = int32(i)
	}
	ascending, descending := true, true
	for i := 1; i < len(keys) && (ascending || descending); i++ {
		c := cmp(keys[i-1], keys[i])
		ascending = ascending && c < 0
		descending = descending && c > 0
	}
	switch {
	case ascending:
	case descending:
		slices.Reverse(order)
	default:
		// The index breaks ties: the order is total, so an unstable sort gives the stable one.
		slices.SortFunc(order, func(a, b int32) int {
			if c := cmp(keys[a], keys[b]); c != 0 {
				return c
			}
			return int(a - b)
		})
	}
	return order
}

// splice is prefix, then skeleton with each marker's bytes (each found once, in any order)
// replaced by its entities (runs of their bytes, bodyRuns.cut), then suffix: as a Body whose
// pieces are the entities' own bytes, in the runs given.
func splice(prefix string, skeleton []byte, suffix string, markers [][]byte, entities [][][][]byte) (Body, error) {
	type cut struct{ at, end, k int }
	cuts := make([]cut, len(markers))
	size, count := len(prefix)+len(skeleton)+len(suffix), 3+len(markers)
	for k, m := range markers {
		i := bytes.Index(skeleton, m)
		if i < 0 || bytes.Contains(skeleton[i+len(m):], m) {
			return Body{}, fmt.Errorf("rendering: placeholder %s not found once in the configuration", m)
		}
		cuts[k] = cut{i, i + len(m), k}
		size -= len(m)
		count += len(entities[k])
		for _, run := range entities[k] {
			for _, e := range run {
				size += len(e)
			}
		}
	}
	slices.SortFunc(cuts, func(a, b cut) int { return a.at - b.at })
	// The prefix, the skeleton's parts and the suffix are pieces of frame, each a run of its
	// own (frame holds them all from the start: its array is never moved).
	frame := make([][]byte, 0, 3+len(markers))
	runs := make([][][]byte, 0, count)
	piece := func(b []byte) {
		frame = append(frame, b)
		runs = append(runs, frame[len(frame)-1:])
	}
	piece([]byte(prefix))
	prev := 0
	for _, c := range cuts {
		if c.at < prev {
			return Body{}, fmt.Errorf("rendering: placeholder %s overlaps another", markers[c.k])
		}
		piece(skeleton[prev:c.at])
		runs = append(runs, entities[c.k]...)
		prev = c.end
	}
	piece(skeleton[prev:])
	piece([]byte(suffix))
	return Body{chunks: runs, size: size}, nil
}
