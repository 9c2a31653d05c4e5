package dbless

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// A push asked for its POST's trace records the POST's parts in order, and whether the
// connection was a kept-alive one; a push not asked records nothing.
func TestPostTraceRecordsThePost(t *testing.T) {
	f := &fakeKong{}
	g := newGateway(t, f)
	var first, second PostTrace

	_, err := g.Push(WithPostTrace(context.Background(), &first), []byte(`{"_format_version":"3.0"}`))
	require.NoError(t, err)
	require.False(t, first.Start().IsZero())
	require.False(t, first.Written().Before(first.Start()), "written before it started")
	require.False(t, first.Answered().Before(first.Written()), "answered before it was written")
	require.True(t, first.Reused(), "the POST follows GET /status on the same connection")

	_, err = g.Push(context.Background(), []byte(`{"_format_version":"3.0","services":[]}`))
	require.NoError(t, err)
	_, err = g.Push(WithPostTrace(context.Background(), &second), []byte(`{"_format_version":"3.0"}`))
	require.NoError(t, err)
	require.True(t, second.Start().After(first.Answered()), "the second push's trace is its own")

	var unchanged PostTrace
	out, err := g.Push(WithPostTrace(context.Background(), &unchanged), []byte(`{"_format_version":"3.0"}`))
	require.NoError(t, err)
	require.Equal(t, Unchanged, out)
	require.True(t, unchanged.Start().IsZero(), "nothing was posted")
}
