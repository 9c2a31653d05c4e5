package dataplane

import (
	"context"
	"time"
)

// RouterAsk asks one gateway GET / (ReadRoot, or an answer it keeps). A nil Root with a nil
// error means there is nothing to learn: its router is already reported.
type RouterAsk func(context.Context) (*Root, error)

// Learn asks every gateway of asks (by URL) its router at once and tells f what those that
// answered within timeout said; it returns their answers (URL -> router flavor). It is how a
// standby replica, which does not sync, learns the router the leader renders for before its
// warm translation, whether its gateways are discovered (discovery.Set.LearnRouters) or given
// by --kong-admin-url (the standby's learner in internal/manager): the translation and the
// admission webhook then follow the gateways' router from the standby's first period, and a
// takeover does not translate everything again for another router. It waits timeout at most,
// whether or not an ask honours its context (an ask may wait for one already in flight, as
// DetectingGateway.Detect does): a gateway that does not answer is asked again next time, and
// holds up nothing for longer. Once ctx ended it reports nothing. It only reads. A nil *RouterFlavors is told nothing, but the
// answers are still returned.
func (f *RouterFlavors) Learn(ctx context.Context, timeout time.Duration, asks map[string]RouterAsk) map[string]string {
	type answer struct {
		url    string
		flavor string
		ok     bool
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	answers := make(chan answer, len(asks)) // buffered: an ask that ends late never blocks
	for url, ask := range asks {
		go func() {
			root, err := ask(ctx)
			ok := err == nil && root != nil
			a := answer{url: url, ok: ok}
			if ok {
				a.flavor = root.RouterFlavor
			}
			answers <- a
		}()
	}
	learned := map[string]string{}
	for range asks {
		select {
		case a := <-answers:
			if a.ok {
				learned[a.url] = a.flavor
			}
		case <-ctx.Done():
			return f.reportAll(parent, learned)
		}
	}
	return f.reportAll(parent, learned)
}

// reportAll reports each of learned (URL -> flavor) and returns it; nothing when parent ended
// (a standby is cancelled the moment it leads: the loop's first round may be translating
// already, and the first sync's check against GET / then reports the router after that
// round's target, DetectingGateway.detected).
func (f *RouterFlavors) reportAll(parent context.Context, learned map[string]string) map[string]string {
	if parent.Err() != nil {
		return nil
	}
	for url, flavor := range learned {
		f.Report(url, flavor)
	}
	return learned
}
