package dataplane

import (
	"context"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/kong/go-kong/kong"

	"github.com/konductor/konductor/internal/translator"
)

// GatewayFacts learns from the gateways' Admin APIs what translation needs to know of them
// beyond their router flavor, so that translation itself stays pure (it gets the answers in
// translator.Options):
//
//   - whether they are Kong Gateway Enterprise (GET /: "edition", or an Enterprise version
//     such as 3.10.0.1, go-kong's IsKongGatewayEnterprise, which is KIC's test): only then is
//     a KongLicense rendered;
//   - the schema of each custom entity type in use (GET /schemas/<type>), as KIC asks while
//     it translates KongCustomEntities.
//
// Answers (a schema, or Kong's 404 for a type it does not have) are kept for the life of the
// process; a question that failed (the gateway unreachable) is asked again only after
// RetryAfter, so a gateway that is down costs a round at most one timeout now and then.
// Safe for concurrent use.
type GatewayFacts struct {
	clients func() []*kong.Client
	// Timeout bounds each question; RetryAfter is how long a failed one is not asked again.
	Timeout, RetryAfter time.Duration
	now                 func() time.Time

	mu        sync.Mutex
	editions  map[string]bool      // gateway URL -> Enterprise
	rootFail  map[string]time.Time // gateway URL -> when GET / failed
	schemas   map[string]translator.EntitySchemaAnswer
	schemaErr map[string]failedQuestion
	listed    map[string]bool // the gateways the last Learn was given (forgetGone)
}

type failedQuestion struct {
	at  time.Time
	err string
}

// NewGatewayFacts asks the gateways clients returns (called at each Learn, so that
// discovered gateways count as they come and go).
func NewGatewayFacts(clients func() []*kong.Client) *GatewayFacts {
	return &GatewayFacts{
		clients: clients, Timeout: 5 * time.Second, RetryAfter: 10 * time.Second, now: time.Now,
		editions: map[string]bool{}, rootFail: map[string]time.Time{},
		schemas: map[string]translator.EntitySchemaAnswer{}, schemaErr: map[string]failedQuestion{},
	}
}

// Learn asks what is not known yet and returns whether every current gateway that answered
// is Kong Gateway Enterprise (false when none answered), and the schema answers of types.
// The questions are asked without holding the lock: a gateway slow to answer holds up this
// Learn only, not RecordRoot or another Learn.
func (f *GatewayFacts) Learn(ctx context.Context, types []string) (enterprise bool, schemas map[string]translator.EntitySchemaAnswer) {
	if f == nil {
		return false, nil
	}
	clients := f.clients()
	sort.Slice(clients, func(i, j int) bool { return clients[i].BaseRootURL() < clients[j].BaseRootURL() })
	f.mu.Lock()
	f.forgetGone(clients)
	var askRoot []*kong.Client
	for _, c := range clients {
		url := c.BaseRootURL()
		if _, ok := f.editions[url]; !ok && f.due(f.rootFail[url]) {
			askRoot = append(askRoot, c)
		}
	}
	var askTypes []string
	for _, t := range types {
		if _, ok := f.schemas[t]; ok {
			continue
		}
		if failed, ok := f.schemaErr[t]; ok && !f.due(failed.at) {
			continue
		}
		askTypes = append(askTypes, t)
	}
	f.mu.Unlock()

	for _, c := range askRoot {
		f.askEdition(ctx, c)
	}
	asked := map[string]*translator.EntitySchemaAnswer{} // nil: no gateway to ask
	for _, t := range askTypes {
		asked[t] = f.askSchema(ctx, clients, t)
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	known, allEnterprise := 0, true
	for _, c := range clients {
		if ee, ok := f.editions[c.BaseRootURL()]; ok {
			known++
			allEnterprise = allEnterprise && ee
		}
	}
	if len(types) > 0 {
		schemas = map[string]translator.EntitySchemaAnswer{}
	}
	for _, t := range types {
		if a, ok := asked[t]; ok {
			if a != nil {
				schemas[t] = *a
			}
			continue
		}
		if a, ok := f.schemas[t]; ok {
			schemas[t] = a
		} else if failed, ok := f.schemaErr[t]; ok {
			schemas[t] = translator.EntitySchemaAnswer{Error: failed.err}
		}
	}
	return known > 0 && allEnterprise, schemas
}

// RecordRoot keeps what a gateway's answer to GET / says of its edition, so that Learn does
// not ask it again: the controller asks each gateway GET / once and hands the answer over,
// at start for the --kong-admin-url ones (DetectingGateway.Detect, issue #13), when it
// learns the router of a discovered one (discovery.Set.ShareRootsWith). baseRootURL is the
// gateway's kong.Client.BaseRootURL.
func (f *GatewayFacts) RecordRoot(baseRootURL string, root Root) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.editions[baseRootURL] = root.Enterprise
	delete(f.rootFail, baseRootURL)
}

// forgetGone drops what was learned of the gateways the last Learn was given and clients
// no longer holds: discovered gateways come and go (a replaced Pod has a new address), and an
// address reused by another gateway must be asked again. An answer recorded for a gateway not
// listed yet (RecordRoot from a discovery check that has not published it) is kept. The
// schema answers, which are the answers of the set of gateways, are asked again when one
// left it (a rolling upgrade to a Kong with other entity types). Called with mu held.
func (f *GatewayFacts) forgetGone(clients []*kong.Client) {
	current := make(map[string]bool, len(clients))
	for _, c := range clients {
		current[c.BaseRootURL()] = true
	}
	gone := func(url string) bool { return f.listed[url] && !current[url] }
	for url := range f.listed {
		if !current[url] {
			clear(f.schemas)
			clear(f.schemaErr)
			break
		}
	}
	maps.DeleteFunc(f.editions, func(url string, _ bool) bool { return gone(url) })
	maps.DeleteFunc(f.rootFail, func(url string, _ time.Time) bool { return gone(url) })
	f.listed = current
}

func (f *GatewayFacts) due(failedAt time.Time) bool {
	return failedAt.IsZero() || f.now().Sub(failedAt) >= f.RetryAfter
}

// askEdition is GET / of one gateway, its answer or failure kept. Caller does not hold mu.
func (f *GatewayFacts) askEdition(ctx context.Context, c *kong.Client) {
	cctx, cancel := context.WithTimeout(ctx, f.Timeout)
	defer cancel()
	root, err := ReadRoot(cctx, c)
	if err != nil {
		f.mu.Lock()
		f.rootFail[c.BaseRootURL()] = f.now()
		f.mu.Unlock()
		return
	}
	f.RecordRoot(c.BaseRootURL(), root)
}

// IsEnterprise reads Kong Gateway Enterprise from a GET / answer: Kong reports "edition"
// ("enterprise" when its full version string says so, kong/api/routes/kong.lua), and an
// Enterprise version has a fourth number (3.10.0.1) or says "enterprise" (go-kong's
// IsKongGatewayEnterprise, which KIC uses).
func IsEnterprise(root map[string]any) bool {
	if root["edition"] == "enterprise" {
		return true
	}
	v, err := kong.ParseSemanticVersion(kong.VersionFromInfo(root))
	return err == nil && v.IsKongGatewayEnterprise()
}

// askSchema is GET /schemas/<t> of every gateway. A gateway's 404 is an answer (Kong has no
// such entity) and wins over another's schema: the same configuration goes to every gateway,
// and one that does not know the type would refuse all of it. When no gateway answers, the
// failure is remembered; nil when there is no gateway to ask. Caller does not hold mu.
func (f *GatewayFacts) askSchema(ctx context.Context, clients []*kong.Client, t string) *translator.EntitySchemaAnswer {
	var lastErr error
	var found *translator.EntitySchemaAnswer
	for _, c := range clients {
		cctx, cancel := context.WithTimeout(ctx, f.Timeout)
		s, err := c.Schemas.Get(cctx, t)
		cancel()
		switch {
		case err == nil:
			if found == nil {
				found = &translator.EntitySchemaAnswer{Schema: map[string]any(s)}
			}
		case kong.IsNotFoundErr(err):
			found = &translator.EntitySchemaAnswer{Error: err.Error()}
		default:
			lastErr = err
			continue
		}
		if found.Schema == nil {
			break
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if found != nil {
		f.schemas[t] = *found
		delete(f.schemaErr, t)
		return found
	}
	if lastErr == nil {
		return nil // no gateway to ask
	}
	f.schemaErr[t] = failedQuestion{at: f.now(), err: lastErr.Error()}
	return &translator.EntitySchemaAnswer{Error: lastErr.Error()}
}
