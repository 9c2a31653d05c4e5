package dbmode

import (
	"net/http"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongstate"
)

// A standby prepares; Kong is the same when it leads: its first sync diffs the prepared
// states, writes nothing, and the states serve that one sync only.
func TestPreparedStatesServeTheNextSync(t *testing.T) {
	e, old := newKong(t, Options{})
	s := translate(t, objects(apps(5)...))
	require.NoError(t, old.Sync(ctx, target(s)))

	standby, err := New(old.url, nil, Options{})
	require.NoError(t, err)
	require.NoError(t, standby.Prepare(ctx, target(s)))
	mark := e.AuditMark()
	res, err := standby.sync(ctx, target(translate(t, objects(apps(5)...))))
	require.NoError(t, err)
	require.True(t, res.PreparedCurrent, "Kong unchanged: the prepared current state is used")
	require.True(t, res.PreparedTarget, "same rendered target: the prepared target state is used")
	require.Zero(t, res.Total())
	require.Empty(t, e.AuditSince(mark))

	res, err = standby.sync(ctx, target(s))
	require.NoError(t, err)
	require.False(t, res.PreparedCurrent, "a prepared state serves one sync")
	require.False(t, res.PreparedTarget)
}

// The translation changed after Prepare: the prepared current state still serves (Kong is
// the same), the target is built again, and Kong gets the new target.
func TestPreparedCurrentStateWithANewTarget(t *testing.T) {
	e, old := newKong(t, Options{})
	require.NoError(t, old.Sync(ctx, target(translate(t, objects(apps(5)...)))))

	standby, err := New(old.url, nil, Options{})
	require.NoError(t, err)
	require.NoError(t, standby.Prepare(ctx, target(translate(t, objects(apps(5)...)))))
	res, err := standby.sync(ctx, target(translate(t, objects(apps(6)...))))
	require.NoError(t, err)
	require.True(t, res.PreparedCurrent)
	require.False(t, res.PreparedTarget)
	require.Equal(t, 4, res.Creates, "service, route, upstream, target of the sixth Ingress")
	require.Len(t, e.Entities("routes"), 6)
}

// Kong changed after Prepare (the old leader wrote, someone deleted a route by hand): the
// new leader's sync never assumes the prepared current state; it indexes its own dump and
// repairs Kong.
func TestPreparedStatesAreNotUsedWhenKongChanged(t *testing.T) {
	e, old := newKong(t, Options{})
	s5, s6 := translate(t, objects(apps(5)...)), translate(t, objects(apps(6)...))
	require.NoError(t, old.Sync(ctx, target(s5)))

	standby, err := New(old.url, nil, Options{})
	require.NoError(t, err)
	require.NoError(t, standby.Prepare(ctx, target(s6)))

	// The old leader is still writing, and a route goes by hand.
	require.NoError(t, old.Sync(ctx, target(s6)))
	route := *s6.Services[0].Routes[0].ID
	req, err := http.NewRequest(http.MethodDelete, old.url+"/routes/"+route, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Nil(t, e.Entity("routes", route))

	res, err := standby.sync(ctx, target(s6))
	require.NoError(t, err)
	require.False(t, res.PreparedCurrent, "Kong changed since Prepare")
	require.False(t, res.PreparedTarget)
	require.Equal(t, 1, res.Creates, "the route deleted by hand is created again")
	require.NotNil(t, e.Entity("routes", route))
	require.Len(t, e.Entities("routes"), 6)
}

// Prepare of a target Kong does not hold yet keeps nothing (its dry run recorded the
// changes in the current state): the sync builds its states and writes the difference.
func TestPrepareOfAChangeKeepsNothing(t *testing.T) {
	e, old := newKong(t, Options{})
	require.NoError(t, old.Sync(ctx, target(translate(t, objects(apps(5)...)))))

	standby, err := New(old.url, nil, Options{})
	require.NoError(t, err)
	s6 := translate(t, objects(apps(6)...))
	require.NoError(t, standby.Prepare(ctx, target(s6)))
	res, err := standby.sync(ctx, target(s6))
	require.NoError(t, err)
	require.False(t, res.PreparedCurrent)
	require.Equal(t, 4, res.Creates)
	require.Len(t, e.Entities("routes"), 6)
}

// A sync does not wait for a Prepare in flight, and the two share the gateway safely (run
// with -race): Kong ends holding the target whatever their order.
func TestPrepareAndSyncAtOnce(t *testing.T) {
	e, g := newKong(t, Options{})
	s := translate(t, objects(apps(5)...))
	require.NoError(t, g.Sync(ctx, target(s)))
	s6 := translate(t, objects(apps(6)...))
	prepared := make(chan error, 1)
	go func() { prepared <- g.Prepare(ctx, target(s6)) }()
	require.NoError(t, g.Sync(ctx, target(s6)))
	require.NoError(t, <-prepared)
	require.Len(t, e.Entities("routes"), 6)
	res, err := g.sync(ctx, target(s6))
	require.NoError(t, err)
	require.Zero(t, res.Total())
}

// The new leader's sync asks Kong Prepare's requests again rather than dumping (dumpreplay.go):
// when every answer is the same it makes exactly those requests (and GET /), each once;
// when a single answer deep in the dump differs (one upstream's targets, changed by hand),
// it dumps and repairs Kong.
func TestPreparedDumpIsReplayed(t *testing.T) {
	e, old := newKong(t, Options{})
	s := translate(t, objects(apps(5)...))
	require.NoError(t, old.Sync(ctx, target(s)))

	standby, err := New(old.url, nil, Options{})
	require.NoError(t, err)
	require.NoError(t, standby.Prepare(ctx, target(s))) // reads the schemas, which the gateway keeps
	before := e.RequestCount("", "")
	require.NoError(t, standby.Prepare(ctx, target(s))) // GET / and the dump
	prepareRequests := e.RequestCount("", "") - before
	before = e.RequestCount("", "")
	res, err := standby.sync(ctx, target(s))
	require.NoError(t, err)
	require.True(t, res.PreparedCurrent)
	require.Equal(t, prepareRequests, e.RequestCount("", "")-before, "GET / and the dump's requests, once each")

	// One target deleted by hand: only the answer of its upstream's target list changes.
	require.NoError(t, standby.Prepare(ctx, target(s)))
	tg := e.Entities("targets")[2]
	upstream := tg["upstream"].(map[string]any)["id"].(string)
	req, err := http.NewRequest(http.MethodDelete, old.url+"/upstreams/"+upstream+"/targets/"+tg["id"].(string), nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Len(t, e.Entities("targets"), 4)

	res, err = standby.sync(ctx, target(s))
	require.NoError(t, err)
	require.False(t, res.PreparedCurrent, "one target list answered differently")
	require.False(t, res.PreparedTarget)
	require.Equal(t, 1, res.Creates, "the target deleted by hand is created again")
	require.Len(t, e.Entities("targets"), 5)
}

// onMessage is a log sink that calls do when msg is logged.
type onMessage struct {
	msg string
	do  func()
}

func (s onMessage) Init(logr.RuntimeInfo)          {}
func (s onMessage) Enabled(int) bool               { return true }
func (s onMessage) Error(error, string, ...any)    {}
func (s onMessage) WithValues(...any) logr.LogSink { return s }
func (s onMessage) WithName(string) logr.LogSink   { return s }
func (s onMessage) Info(_ int, msg string, _ ...any) {
	if msg == s.msg {
		s.do()
	}
}

// Prepared states serve a sync's first pass only: a Prepare that lands between the passes of
// a sync that isolates a refused object (a standby's, had it lost the lease) is left to the
// next sync, not taken by the second pass.
func TestPreparedStatesServeTheFirstPassOnly(t *testing.T) {
	var g *Gateway
	var good *kongstate.State
	prepared := 0
	between := onMessage{msg: "Kong refused entities; syncing again without their objects", do: func() {
		require.NoError(t, g.Prepare(ctx, target(good)))
		prepared++
	}}
	_, g = newKong(t, Options{Logger: logr.New(between)})
	good = translate(t, objects(apps(3)...))
	require.NoError(t, g.Sync(ctx, target(good)))

	// One route changed into one Kong refuses: the first pass changes nothing else, so Kong
	// holds good when the Prepare between the passes dumps it.
	bad := translate(t, objects(apps(3)...))
	badPath(bad, 1)
	res, err := g.sync(ctx, target(bad))
	var rej *dataplane.RejectedError
	require.ErrorAs(t, err, &rej)
	require.Equal(t, 1, prepared, "a second pass ran")
	require.False(t, res.PreparedCurrent, "the second pass does not take what was prepared during the sync")
	require.NotNil(t, g.takePrepared(), "it is left to the next sync")
}
