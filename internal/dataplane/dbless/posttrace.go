package dbless

import (
	"context"
	"net/http/httptrace"
	"time"
)

// PostTrace is when the parts of a push's POST /config happened: what a change's way to Kong
// is made of (the end-to-end benchmark's breakdown, debug logs). A caller asks for it with
// WithPostTrace; without it no clock is read and no trace is attached.
type PostTrace struct {
	// Start is when the request was made, Written when its body had been written to the
	// connection, Answered when Kong's answer had been read (zero when it did not come).
	Start, Written, Answered time.Time
	// Reused says whether the connection was a kept-alive one (no dial, no TLS handshake).
	Reused bool
}

type postTraceKey struct{}

// WithPostTrace makes the POST /config of a push under ctx record its times into t.
func WithPostTrace(ctx context.Context, t *PostTrace) context.Context {
	return context.WithValue(ctx, postTraceKey{}, t)
}

// tracePost is ctx with an httptrace recording into the PostTrace WithPostTrace put there
// (and that trace), or ctx itself and nil when there is none.
func tracePost(ctx context.Context) (context.Context, *PostTrace) {
	t, _ := ctx.Value(postTraceKey{}).(*PostTrace)
	if t == nil {
		return ctx, nil
	}
	*t = PostTrace{Start: time.Now()}
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn:      func(info httptrace.GotConnInfo) { t.Reused = info.Reused },
		WroteRequest: func(httptrace.WroteRequestInfo) { t.Written = time.Now() },
	}), t
}
