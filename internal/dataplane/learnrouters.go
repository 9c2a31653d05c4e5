package dataplane

import (
	"context"
	"time"
)

// RouterAsk asks one gateway GET / (ReadRoot, or an answer it keeps). A nil Root with a nil
// error means there is nothing to learn: its router is already reported.
type RouterAsk func(context.Context) (*Root, error)

// Learn asks every gateway of asks (by URL) its router at once and tells f what those that
// answered within timeout said; it returns their answers (URL -> GET /). It is how a
// standby replica, which does not sync, learns the router the leader renders for before its
// warm translation, whether its gateways are discovered (discovery.Set.LearnRouters) or given
// by --kong-admin-url (the standby's learner in internal/manager): the translation and the
// admission webhook then follow the gateways' router from the standby's first period, and a
// takeover does not translate everything again for another router. It waits timeout at most,
// whether or not an ask honours its context (an ask may wait for one already in flight, as
// DetectingGateway.Detect does): a gateway that does not answer is asked again next time, and
// holds up nothing for longer. Once ctx ended it reports nothing. It only reads. A nil *RouterFlavors is told nothing, but the
// answers are still returned.
func (f *RouterFlavors) Learn(ctx context.Context, timeout time.Duration, asks map[string]RouterAsk) map[string]Root {
	type answer struct {
		url  string
		root *Root
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	answers := make(chan answer, len(asks)) // buffered: an ask that ends late never blocks
	for url, ask := range asks {
		go func() {
			root, err := ask(ctx)
			if err != nil {
				root = nil
			}
			answers <- answer{url: url, root: root}
		}()
	}
	learned := map[string]Root{}
	for range asks {
		select {
		case a := <-answers:
			if a.root != nil {
				learned[a.url] = *a.root
			}
		case <-ctx.Done():
			return f.reportAll(parent, learned)
		}
	}
	return f.reportAll(parent, learned)
}

// reportAll reports the router of each of learned (URL -> GET /) and returns it; nothing when parent ended
// (a standby is cancelled the moment it leads: the loop's first round may be translating
// already, and the first sync's check against GET / then reports the router after that
// round's target, DetectingGateway.detected).
func (f *RouterFlavors) reportAll(parent context.Context, learned map[string]Root) map[string]Root {
	if parent.Err() != nil {
		return nil
	}
	for url, root := range learned {
		f.ReportRoot(url, root)
	}
	return learned
}
