package konnect

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/blang/semver/v4"
	"github.com/go-logr/logr"
	"github.com/kong/go-database-reconciler/pkg/diff"
	"github.com/kong/go-database-reconciler/pkg/dump"
	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-database-reconciler/pkg/state"
	"github.com/kong/go-kong/kong"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/redact"
)

// Recorder records the outcome of each upload (KIC counts them with the gateways' push
// metrics: protocol "deck", dataplane the control plane's URL).
type Recorder interface {
	KonnectPush(url string, err error, took time.Duration)
}

// SyncOptions configure a ConfigSync (KIC's flags).
type SyncOptions struct {
	// Period is --konnect-upload-config-period: an upload is tried on each tick.
	Period time.Duration
	// Concurrency is --konnect-config-sync-concurrency.
	Concurrency int
	// NoConsumers is --konnect-disable-consumers-sync: no consumer is uploaded (with their
	// credentials and the plugins scoped to them).
	NoConsumers bool
	// KongVersion is the gateways' Kong version (go-database-reconciler renders defaults by
	// it); zero: 3.0.
	KongVersion func() semver.Version
	Recorder    Recorder
	Log         logr.Logger
}

// ConfigSync uploads the configuration the gateways took to the Konnect control plane (KIC's
// ConfigSynchronizer). Report keeps the latest configuration every gateway of a round took,
// at once and without I/O; each tick of Period uploads it, when it differs from the last one
// uploaded, with go-database-reconciler in Konnect mode: the control plane is dumped whole
// (Konnect's control plane for the controller holds only what the controller puts there),
// diffed with the configuration, and only what differs is written. An upload that fails
// backs off (3 s doubling to 15 min, as KIC); one Konnect refused (4xx) is not tried again
// until the configuration changes. Secrets are not uploaded (redact.SanitizedContent).
type ConfigSync struct {
	opts   Options
	sopts  SyncOptions
	client *kong.Client

	mu     sync.Mutex
	latest *kongstate.State
	// rendered is what latest uploads as, and its digest: rendered once per State, not on
	// every tick (a State is never changed once reported).
	rendered      *kongstate.State
	content       *file.Content
	contentDigest [sha256.Size]byte
	uploaded      [sha256.Size]byte // the last configuration Konnect took
	refused       [sha256.Size]byte // the last one Konnect refused (4xx)
	backoff       time.Duration
	notUntil      time.Time
	failed        bool // the last upload tried failed (for the node agent's status)
}

// NewConfigSync returns the synchronizer of the control plane opts names.
func NewConfigSync(opts Options, sopts SyncOptions) (*ConfigSync, error) {
	client, err := opts.KongClient()
	if err != nil {
		return nil, err
	}
	if sopts.Concurrency < 1 {
		sopts.Concurrency = 1
	}
	return &ConfigSync{opts: opts, sopts: sopts, client: client}, nil
}

// Report implements dataplane.Reporter: the configuration every gateway holds (the round's,
// or the fallback configuration they took instead: KIC uploads what the gateways applied,
// its generated fallback included) is the next to upload. Nothing else is done on the
// loop's path.
func (s *ConfigSync) Report(_ context.Context, r dataplane.Round) {
	if r.Held == nil {
		return
	}
	s.mu.Lock()
	s.latest = r.Held
	s.mu.Unlock()
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: the leader uploads.
func (s *ConfigSync) NeedLeaderElection() bool { return true }

// Start uploads on every tick until ctx ends.
func (s *ConfigSync) Start(ctx context.Context) error {
	t := time.NewTicker(s.sopts.Period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := s.Upload(ctx); err != nil && ctx.Err() == nil {
				s.sopts.Log.Error(err, "Failed to upload configuration to Konnect", "controlPlane", s.opts.ControlPlaneID)
			}
		}
	}
}

// Failed reports whether the last upload tried failed.
func (s *ConfigSync) Failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// errBackoff is an upload not tried: an earlier one failed and its backoff has not passed.
var errBackoff = errors.New("Konnect upload skipped: backing off after a failure")

// Upload uploads the latest configuration now if it is not the one uploaded last (nothing
// before a round's gateways took one). Start calls it on each tick.
func (s *ConfigSync) Upload(ctx context.Context) error {
	s.mu.Lock()
	st, rendered, content, digest := s.latest, s.rendered, s.content, s.contentDigest
	s.mu.Unlock()
	if st == nil {
		return nil
	}
	if st != rendered {
		content = s.render(st)
		var err error
		if digest, err = contentDigest(content); err != nil {
			return err
		}
		s.mu.Lock()
		s.rendered, s.content, s.contentDigest = st, content, digest
		s.mu.Unlock()
	}
	s.mu.Lock()
	switch {
	case digest == s.uploaded:
		s.mu.Unlock()
		return nil
	case digest == s.refused:
		s.mu.Unlock()
		return nil // Konnect refused this very configuration: wait for a change
	case time.Now().Before(s.notUntil):
		s.mu.Unlock()
		return errBackoff
	}
	s.mu.Unlock()

	start := time.Now()
	err := s.sync(ctx, content.DeepCopy()) // go-database-reconciler may fill what it is given
	if s.sopts.Recorder != nil && !errors.Is(err, context.Canceled) {
		s.sopts.Recorder.KonnectPush(s.opts.BaseURL(), err, time.Since(start))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed = err != nil
	if err == nil {
		s.uploaded, s.backoff, s.notUntil = digest, 0, time.Time{}
		return nil
	}
	if refusedByKonnect(err) {
		s.refused = digest
	}
	s.backoff = min(max(2*s.backoff, 3*time.Second), 15*time.Minute)
	s.notUntil = time.Now().Add(s.backoff)
	return err
}

// render is what is uploaded of st: its configuration without secrets, licenses (Konnect
// keeps its own) or custom entities (KIC sends none), and without consumers when asked.
func (s *ConfigSync) render(st *kongstate.State) *file.Content {
	c := redact.SanitizedContent(st.Content())
	c.Licenses = nil
	if s.sopts.NoConsumers {
		c.Consumers = nil
		kept := c.Plugins[:0]
		for _, p := range c.Plugins {
			if p.Consumer == nil {
				kept = append(kept, p)
			}
		}
		c.Plugins = kept
	}
	return c
}

func contentDigest(c *file.Content) ([sha256.Size]byte, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("rendering the Konnect configuration: %w", err)
	}
	return sha256.Sum256(b), nil
}

// sync makes the control plane hold c: go-database-reconciler in Konnect mode (KIC's
// UpdateStrategyDBMode with isKonnect).
func (s *ConfigSync) sync(ctx context.Context, c *file.Content) error {
	dumpConfig := dump.Config{KonnectControlPlane: s.opts.ControlPlaneID}
	raw, err := dump.Get(ctx, s.client, dumpConfig)
	if err != nil {
		return fmt.Errorf("reading the Konnect control plane %s: %w", s.opts.ControlPlaneID, err)
	}
	current, err := state.Get(raw)
	if err != nil {
		return fmt.Errorf("indexing the Konnect control plane: %w", err)
	}
	version := semver.Version{Major: 3}
	if s.sopts.KongVersion != nil {
		if v := s.sopts.KongVersion(); !v.EQ(semver.Version{}) {
			version = v
		}
	}
	targetRaw, err := file.Get(ctx, c, file.RenderConfig{CurrentState: current, KongVersion: version}, dumpConfig, s.client)
	if err != nil {
		return fmt.Errorf("building the Konnect target: %w", err)
	}
	target, err := state.Get(targetRaw)
	if err != nil {
		return fmt.Errorf("indexing the Konnect target: %w", err)
	}
	syncer, err := diff.NewSyncer(diff.SyncerOpts{
		CurrentState: current, TargetState: target, KongClient: s.client,
		SilenceWarnings: true, IsKonnect: true, EnableEntityActions: true,
		CreatePrintln: s.println, UpdatePrintln: s.println, DeletePrintln: s.println,
	})
	if err != nil {
		return fmt.Errorf("diffing the Konnect control plane: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range syncer.GetResultChan() { // read until the syncer closes it
		}
	}()
	_, errs, _ := syncer.Solve(ctx, s.sopts.Concurrency, false, false)
	<-done
	for _, e := range errs {
		s.sopts.Log.Error(e, "Failed to send request to Konnect", "controlPlane", s.opts.ControlPlaneID)
	}
	return errors.Join(errs...)
}

func (s *ConfigSync) println(a ...any) { s.sopts.Log.V(1).Info(fmt.Sprint(a...)) }

// refusedByKonnect reports whether err holds a 4xx answer other than 429 (KIC's Konnect
// backoff blocks such a configuration until it changes); network errors and 5xx do not.
func refusedByKonnect(err error) bool {
	var netErr net.Error
	if errors.As(err, &netErr) {
		return false
	}
	var apiErr *kong.APIError
	if errors.As(err, &apiErr) {
		code := apiErr.Code()
		return code >= 400 && code < 500 && code != 429
	}
	return false
}
