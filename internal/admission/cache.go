package admission

import (
	"slices"

	"github.com/kong/go-database-reconciler/pkg/file"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/translator"
)

// Bounds of the translations a validator keeps between reviews (docs/security.md, item 4):
// the scopes a review names come from whoever sends it, so what is kept does not grow with
// them.
const (
	// DefaultMaxCachedScopes is how many scopes' translations are kept at once.
	DefaultMaxCachedScopes = 16
	// DefaultMaxCachedBytes bounds the kept translations' estimated size (translationBytes).
	DefaultMaxCachedBytes = 128 << 20
)

// scopeCache keeps the translations of the scopes reviewed last, within a count and a size:
// the least recently used goes first. The translation just kept stays even when it alone is
// over the size (the whole cache's, in a large cluster): it is one, and the cluster's size,
// not what the reviews name, sets it.
type scopeCache struct {
	maxEntries int
	maxBytes   int64
	entries    []cachedScope // least recently used first
	bytes      int64
}

type cachedScope struct {
	key   string
	t     *translation
	bytes int64
}

func newScopeCache(maxEntries int, maxBytes int64) *scopeCache {
	return &scopeCache{maxEntries: maxEntries, maxBytes: maxBytes}
}

// get returns the translation of scope key, now the most recently used; nil when not kept.
func (c *scopeCache) get(key string) *translation {
	i := slices.IndexFunc(c.entries, func(e cachedScope) bool { return e.key == key })
	if i < 0 {
		return nil
	}
	e := c.entries[i]
	c.entries = append(slices.Delete(c.entries, i, i+1), e)
	return e.t
}

// put keeps t as scope key's translation and drops the least recently used ones past the
// bounds.
func (c *scopeCache) put(key string, t *translation) {
	if i := slices.IndexFunc(c.entries, func(e cachedScope) bool { return e.key == key }); i >= 0 {
		c.bytes -= c.entries[i].bytes
		c.entries = slices.Delete(c.entries, i, i+1)
	}
	e := cachedScope{key: key, t: t, bytes: translationBytes(t.result)}
	c.entries = append(c.entries, e)
	c.bytes += e.bytes
	for len(c.entries) > 1 && (len(c.entries) > c.maxEntries || c.bytes > c.maxBytes) {
		c.bytes -= c.entries[0].bytes
		c.entries = slices.Delete(c.entries, 0, 1)
	}
}

// Estimated sizes, in bytes, of what a translation holds: a decK entity with its pointers
// and tags, a graph edge, a problem. Calibrated on BenchmarkHostileReviews: a scope holding
// 1,000 consumers and little else kept 0.48 MiB of heap, estimated 0.5 MiB.
const (
	entityBytes  = 512
	edgeBytes    = 128
	problemBytes = 256
)

// translationBytes estimates the memory r holds: its entities, their plugin configurations,
// certificates and keys, the object graph's edges and the problems. An estimate made from
// counts and lengths, not the heap: reading the heap would stop the world on every review.
func translationBytes(r translator.Result) int64 {
	var n int64
	if s := r.State; s != nil {
		n += stateBytes(s)
	}
	if r.Graph != nil {
		for _, deps := range r.Graph.Edges() {
			n += edgeBytes * int64(max(deps.Len(), 1))
		}
	}
	for _, p := range r.Problems {
		n += problemBytes + int64(len(p.Message)+len(p.Field))
	}
	return n
}

func stateBytes(s *kongstate.State) int64 {
	var n int64
	plugin := func(p *file.FPlugin) {
		n += entityBytes
		if p != nil {
			n += valueBytes(map[string]any(p.Config))
		}
	}
	for _, svc := range s.Services {
		n += entityBytes * int64(1+len(svc.Routes))
		for _, p := range svc.Plugins {
			plugin(p)
		}
		for _, r := range svc.Routes {
			for _, p := range r.Plugins {
				plugin(p)
			}
		}
	}
	for _, u := range s.Upstreams {
		n += entityBytes * int64(1+len(u.Targets))
	}
	for _, c := range s.Certificates {
		n += entityBytes + int64(len(deref(c.Cert))+len(deref(c.Key)))
	}
	for _, c := range s.CACertificates {
		n += entityBytes + int64(len(deref(c.Cert)))
	}
	for _, p := range s.Plugins {
		plugin(p)
	}
	for _, c := range s.Consumers {
		n += entityBytes * int64(1+len(c.KeyAuths)+len(c.BasicAuths)+len(c.JWTAuths)+len(c.HMACAuths)+len(c.Oauth2Creds)+len(c.ACLGroups)+len(c.MTLSAuths))
		for _, p := range c.Plugins {
			plugin(p)
		}
	}
	n += entityBytes * int64(len(s.ConsumerGroups)+len(s.Vaults)+len(s.CustomEntities)+len(s.Licenses))
	return n
}

// valueBytes is the size of a decoded JSON value: its strings and a word per element.
func valueBytes(v any) int64 {
	switch v := v.(type) {
	case string:
		return 16 + int64(len(v))
	case map[string]any:
		n := int64(48)
		for k, e := range v {
			n += 16 + int64(len(k)) + valueBytes(e)
		}
		return n
	case []any:
		n := int64(24)
		for _, e := range v {
			n += valueBytes(e)
		}
		return n
	}
	return 16
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
