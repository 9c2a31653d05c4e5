package diagnostics

import (
	"sync"

	"github.com/konductor/konductor/internal/dataplane"
)

// Recorder keeps what the sync loop tells it for the dumps: the last target a gateway took,
// the last one a gateway refused with the refusal, and the fallback in force. Every gateway
// feeds the same Recorder: the last to report wins, as in KIC.
type Recorder struct {
	mu        sync.Mutex
	succeeded *dataplane.Target
	failed    *dataplane.Target
	rawError  []byte
	// fallback is the last fallback tried and fallbackURL its gateway's; nil once that
	// gateway took a whole (not fallback) configuration again.
	fallback    *dataplane.FallbackResult
	fallbackURL string
}

var _ dataplane.Diagnostics = (*Recorder)(nil)

// Succeeded implements dataplane.Diagnostics.
func (r *Recorder) Succeeded(url string, t *dataplane.Target, fallback bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.succeeded = t
	if !fallback && url == r.fallbackURL {
		// KIC drops the fallback metadata once a configuration is taken whole; here only
		// when the gateway that needed the fallback does, so that another gateway's
		// success does not hide a fallback still in force.
		r.fallback, r.fallbackURL = nil, ""
	}
}

// Failed implements dataplane.Diagnostics. The raw error is the refusal's own: a gateway
// whose answer has none (database mode) leaves raw-error empty rather than showing an older
// refusal's body beside this configuration.
func (r *Recorder) Failed(_ string, t *dataplane.Target, rej *dataplane.RejectedError, _ bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed, r.rawError = t, nil
	if rej != nil {
		r.rawError = rej.Raw
	}
}

// Fallback implements dataplane.Diagnostics.
func (r *Recorder) Fallback(url string, fb dataplane.FallbackResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fallback, r.fallbackURL = &fb, url
}

// recorded is what the Recorder holds, read at once.
type recorded struct {
	succeeded, failed *dataplane.Target
	rawError          []byte
	fallback          *dataplane.FallbackResult
}

func (r *Recorder) read() recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return recorded{succeeded: r.succeeded, failed: r.failed, rawError: r.rawError, fallback: r.fallback}
}
