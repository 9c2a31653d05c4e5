package dataplane

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// echoingGateway fails every sync with a message that echoes a credential, as Kong does.
type echoingGateway struct{ err error }

func (g echoingGateway) URL() string                         { return "echo" }
func (g echoingGateway) Sync(context.Context, *Target) error { return g.err }

type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) write(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(args + "\n")
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The loop's log lines carry the gateways' errors with the configuration's secrets masked.
func TestLoopLogsDoNotCarrySecrets(t *testing.T) {
	state := &kongstate.State{Consumers: []*file.FConsumer{{
		Consumer: kong.Consumer{Username: kong.String("alice")},
		KeyAuths: []*kong.KeyAuth{{Key: kong.String("alice-key-123")}},
	}}}
	for _, err := range []error{
		errors.New(`creating keyauth_credential: UNIQUE violation detected on '{key="alice-key-123"}'`), // retried
		&RejectedError{Gateway: "echo", Message: "duplicate credential alice-key-123"},                  // refused
	} {
		logs := &lockedLog{}
		l := NewLoop(Options{
			Source: newStore(t, cluster()), Barrier: syncedBarrier{},
			Translate: func(*store.Snapshot) translator.Result { return translator.Result{State: state} },
			Gateways:  []Gateway{echoingGateway{err}}, Period: time.Hour, Logger: funcr.New(logs.write, funcr.Options{}),
		})
		stop := run(t, l)
		require.Eventually(t, func() bool { return strings.Contains(logs.String(), "[redacted]") }, 5*time.Second, time.Millisecond)
		stop()
		require.NotContains(t, logs.String(), "alice-key-123")
	}
}
