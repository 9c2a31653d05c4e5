package dbless

import (
	"context"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

// PostTrace is when the parts of a push's POST /config happened: what a change's way to Kong
// is made of (the end-to-end benchmark's breakdown, debug logs). A caller asks for it with
// WithPostTrace; without it no clock is read and no trace is attached.
type PostTrace struct {
	start, answered time.Time // set by the pushing goroutine
	// Set by net/http's callbacks, which may run on its connection's goroutines (the body is
	// written by the connection's writer), and after Kong answered if it answered early.
	written atomic.Int64 // Unix nanoseconds; 0 until written
	reused  atomic.Bool
}

// Start is when the request was made; zero when no POST was made.
func (t *PostTrace) Start() time.Time { return t.start }

// Written is when the request's body had been written to the connection; zero when not (yet).
func (t *PostTrace) Written() time.Time {
	if ns := t.written.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// Answered is when Kong's answer had been read; zero when it did not come.
func (t *PostTrace) Answered() time.Time { return t.answered }

// Reused says whether the connection was a kept-alive one (no dial, no TLS handshake).
func (t *PostTrace) Reused() bool { return t.reused.Load() }

type postTraceKey struct{}

// WithPostTrace makes the POST /config of a push under ctx record its times into t.
func WithPostTrace(ctx context.Context, t *PostTrace) context.Context {
	return context.WithValue(ctx, postTraceKey{}, t)
}

// tracePost is ctx with an httptrace recording into the PostTrace WithPostTrace put there
// (and that trace, its start taken), or ctx itself and nil when there is none.
func tracePost(ctx context.Context) (context.Context, *PostTrace) {
	t, _ := ctx.Value(postTraceKey{}).(*PostTrace)
	if t == nil {
		return ctx, nil
	}
	t.start, t.answered = time.Now(), time.Time{}
	t.written.Store(0)
	t.reused.Store(false)
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn:      func(info httptrace.GotConnInfo) { t.reused.Store(info.Reused) },
		WroteRequest: func(httptrace.WroteRequestInfo) { t.written.Store(time.Now().UnixNano()) },
	}), t
}
