package dataplane

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/konductor/konductor/internal/store"
)

// Diagnostics is told, right after each sync, which configuration a gateway took or refused:
// KIC's --dump-config (internal/diagnostics serves it). It is given the *Target itself, so
// that nothing is rendered for it on the sync's path: a dump renders, if ever, when it is
// asked for (SentConfig). Its methods are called from the sync goroutines, several at once,
// and must only keep what they are given.
type Diagnostics interface {
	// Succeeded: the gateway at url holds t's configuration (sent now, or held already).
	// fallback is true when t is a fallback configuration (fallback.go).
	Succeeded(url string, t *Target, fallback bool)
	// Failed: the gateway at url refused t's configuration, as rej says (in database mode,
	// perhaps only some of its entities: rej.RestApplied).
	Failed(url string, t *Target, rej *RejectedError, fallback bool)
	// Fallback: the gateway at url refused the round's configuration naming objects, and
	// fallback configurations were tried; fb is their outcome.
	Fallback(url string, fb FallbackResult)
}

// observe tells the loop's Diagnostics what the sync of t on g did. A sync that failed
// otherwise than by a refusal (network, 5xx, a context ended) says nothing about the
// configuration and is not told: it would replace the last refused configuration in the
// dumps with one no gateway judged.
func (l *Loop) observe(g *gatewayState, t *Target, err error, fallback bool) {
	d := l.opts.Diagnostics
	if d == nil {
		return
	}
	var rej *RejectedError
	switch {
	case err == nil:
		d.Succeeded(g.URL(), t, fallback)
	case errors.As(err, &rej):
		d.Failed(g.URL(), t, rej, fallback)
	}
}

// SentConfig is the target's declarative configuration as the gateways were sent it, for
// the diagnostics server's dumps: DeclarativeConfig when the loop rendered it (database
// mode, a standby's digest), else the configuration inside the DB-less body when the loop
// rendered that (State.DBLessConfig: without the fields Kong fills the same), else rendered now by the State without the loop's renderer, whose caches
// keep the rounds' entities and stay the rounds' (a dump of DB-less gateways would
// otherwise fill its cache of the form they never use, megabytes kept for nothing).
func (t *Target) SentConfig() ([]byte, error) {
	if t.configDone.Load() {
		return t.config, t.err
	}
	if t.bodyDone.Load() {
		if t.bodyErr != nil {
			return nil, t.bodyErr
		}
		var body struct {
			Config *string `json:"config"`
		}
		if err := json.NewDecoder(t.body.Reader()).Decode(&body); err != nil {
			return nil, fmt.Errorf("reading the configuration of the DB-less body: %w", err)
		}
		if body.Config == nil {
			return nil, errors.New("the DB-less body holds no configuration")
		}
		return []byte(*body.Config), nil
	}
	if t.State == nil {
		return nil, errors.New("no configuration")
	}
	return t.State.DeclarativeConfig()
}

// Snapshot is the cluster state the target was translated from; nil for a target made by
// hand. The diagnostics server reads the Secrets a configuration was built from in it, to
// mask their values in its dumps.
func (t *Target) Snapshot() *store.Snapshot { return t.snapshot }
