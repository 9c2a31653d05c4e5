package dataplane

import (
	"context"
	"net/http"
	"testing"

	"github.com/blang/semver/v4"

	"github.com/go-logr/logr"
	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongstate"
)

// Routes are rendered for the expressions router once every gateway that answered says so;
// a change of that answer asks for a new round, and only a change does.
func TestRouterFlavors(t *testing.T) {
	changes := 0
	f := NewRouterFlavors(func() { changes++ })
	require.False(t, f.Expressions(), "nothing known: traditional")
	f.Report("http://a", "expressions")
	require.True(t, f.Expressions())
	require.Equal(t, 1, changes)
	f.Report("http://a", "expressions")
	require.Equal(t, 1, changes, "the same answer again changes nothing")
	f.Report("http://b", "traditional_compatible")
	require.False(t, f.Expressions(), "one gateway on another router: traditional for all")
	require.Equal(t, 2, changes)

	var none *RouterFlavors
	none.Report("http://a", "expressions")
	require.False(t, none.Expressions())
}

// Regexes are checked as the Rust regex crate's once a gateway that answered runs any flavor
// but "traditional" (traditional_compatible and expressions compile them with Rust); the
// answer changing asks for a new round.
func TestRouterFlavorsRustRegexes(t *testing.T) {
	changes := 0
	f := NewRouterFlavors(func() { changes++ })
	require.False(t, f.RustRegexes(), "nothing known: PCRE's syntax only")
	f.Report("http://a", "traditional")
	require.False(t, f.RustRegexes())
	require.Equal(t, 0, changes)
	f.Report("http://b", "traditional_compatible")
	require.True(t, f.RustRegexes(), "one gateway compiles them with Rust")
	require.Equal(t, 1, changes)
	f.Report("http://b", "traditional")
	require.False(t, f.RustRegexes())
	require.Equal(t, 2, changes)
	f.Report("http://c", "")
	require.False(t, f.RustRegexes(), "no flavor (Kong before 3): traditional")
	var none *RouterFlavors
	require.False(t, none.RustRegexes())
}

// Gateways that went away no longer decide: a Kong upgraded to the expressions router Pod by
// Pod renders for it once the last traditional Pod is gone.
func TestRouterFlavorsForgetGatewaysGone(t *testing.T) {
	changes := 0
	f := NewRouterFlavors(func() { changes++ })
	f.Report("http://old", "traditional_compatible")
	f.Report("http://new", "expressions")
	require.False(t, f.Expressions())
	require.Equal(t, 1, changes)
	f.KeepOnly(map[string]bool{"http://new": true, "http://unknown": true})
	require.True(t, f.Expressions(), "the gateway gone no longer counts")
	require.Equal(t, 2, changes)
	f.KeepOnly(map[string]bool{"http://new": true})
	require.Equal(t, 2, changes, "nothing changed, nothing asked")
	f.KeepOnly(nil)
	require.False(t, f.Expressions(), "no gateway left: traditional")
	var none *RouterFlavors
	none.KeepOnly(nil)
}

// A DB-less gateway that said its router (a discovered one) is not sent a target rendered for
// the expressions router when it runs another: it would refuse every route. Targets of the
// traditional flavors go to every router (Kong 3.7+ takes traditional fields under the
// expressions router), and a gateway whose router is not known takes everything.
func TestDBLessGatewayRefusesTargetsOfAnotherRouter(t *testing.T) {
	expressionRoute := &kongstate.State{Services: []*file.FService{{Service: kong.Service{Name: kong.String("s"), Host: kong.String("h")},
		Routes: []*file.FRoute{{Route: kong.Route{Name: kong.String("r"), Expression: kong.String(`http.path == "/"`)}}}}}}
	traditionalRoute := &kongstate.State{Services: []*file.FService{{Service: kong.Service{Name: kong.String("s"), Host: kong.String("h")},
		Routes: []*file.FRoute{{Route: kong.Route{Name: kong.String("r"), Paths: kong.StringSlice("/")}}}}}}
	srv, c := startEmulator(t) // traditional_compatible
	pushes := func() int { return srv.RequestCount(http.MethodPost, "/config") }

	g := NewDBLessGateway(srv.URL, c, logr.Discard())
	g.Router = "traditional_compatible"
	require.ErrorContains(t, g.Sync(context.Background(), &Target{State: expressionRoute}), "to be rendered again")
	require.Zero(t, pushes(), "nothing sent")
	require.NoError(t, g.Sync(context.Background(), &Target{State: traditionalRoute}))
	require.Equal(t, 1, pushes())
	var rej *RejectedError
	require.ErrorAs(t, NewDBLessGateway(srv.URL, c, logr.Discard()).Sync(context.Background(), &Target{State: expressionRoute}), &rej,
		"what the check spares: the router not known, the gateway refuses the expression")

	srvExpr, err := kongemu.New(kongemu.Options{RouterFlavor: kongemu.RouterExpressions}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { srvExpr.Close() })
	cExpr, err := kong.NewClient(kong.String(srvExpr.URL), &http.Client{})
	require.NoError(t, err)
	g = NewDBLessGateway(srvExpr.URL, cExpr, logr.Discard())
	g.Router = "expressions"
	require.NoError(t, g.Sync(context.Background(), &Target{State: expressionRoute}))
}

// A gateway that said its router judges a target the same way whether it was discovered
// (DBLessGateway.Router) or given by --kong-admin-url (DetectingGateway's first Sync), and as
// Kong 3.7+ does (routes.lua, docs/kong-facts.md): expression routes only under the
// expressions router, traditional fields under every router. The traditional target on an
// expressions Kong used to be held back by DetectingGateway and sent by DBLessGateway.
func TestBothGatewaysJudgeATargetsRouterAlike(t *testing.T) {
	route := func(r kong.Route) *kongstate.State {
		r.Name = kong.String("r")
		return &kongstate.State{Services: []*file.FService{{Service: kong.Service{Name: kong.String("s"), Host: kong.String("h")},
			Routes: []*file.FRoute{{Route: r}}}}}
	}
	expressionRoute := route(kong.Route{Expression: kong.String(`http.path == "/"`)})
	traditionalRoute := route(kong.Route{Paths: kong.StringSlice("/")})
	streamRoute := route(kong.Route{Protocols: kong.StringSlice("tcp"), Destinations: []*kong.CIDRPort{{Port: kong.Int(9000)}}})
	for _, tc := range []struct {
		name    string
		flavor  string
		version string // "": the emulator's, 3.10.0
		target  *kongstate.State
		refused bool
	}{
		{"expression routes, expressions router", kongemu.RouterExpressions, "", expressionRoute, false},
		{"traditional routes, expressions router", kongemu.RouterExpressions, "", traditionalRoute, false},
		{"no routes, expressions router", kongemu.RouterExpressions, "", &kongstate.State{}, false},
		{"expression routes, traditional_compatible router", kongemu.RouterTraditionalCompatible, "", expressionRoute, true},
		{"traditional routes, traditional_compatible router", kongemu.RouterTraditionalCompatible, "", traditionalRoute, false},
		// Kong before 3.7 takes no traditional fields under the expressions router.
		{"traditional routes, expressions router, Kong 3.6", kongemu.RouterExpressions, "3.6.1", traditionalRoute, true},
		{"traditional routes, expressions router, Kong Enterprise 3.4", kongemu.RouterExpressions, "3.4.3.12", traditionalRoute, true},
		{"traditional routes, expressions router, Kong 3.7", kongemu.RouterExpressions, "3.7.0", traditionalRoute, false},
		{"expression routes, expressions router, Kong 3.6", kongemu.RouterExpressions, "3.6.1", expressionRoute, false},
		{"no routes, expressions router, Kong 3.6", kongemu.RouterExpressions, "3.6.1", &kongstate.State{}, false},
		{"traditional routes, traditional_compatible router, Kong 3.6", kongemu.RouterTraditionalCompatible, "3.6.1", traditionalRoute, false},
		// Stream routes keep their traditional fields in an expressions round too: judged by
		// Kong itself, one by one, not refused whole for ever.
		{"stream routes only, expressions router, Kong 3.6", kongemu.RouterExpressions, "3.6.1", streamRoute, false},
		{"enterprise version string, expressions router", kongemu.RouterExpressions, "3.6.1.4-enterprise-edition", traditionalRoute, true},
		{"unreadable version, expressions router", kongemu.RouterExpressions, "dev", traditionalRoute, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kongOf := func() (*kongemu.Server, *kong.Client) {
				srv, err := kongemu.New(kongemu.Options{Mode: kongemu.DBLess, RouterFlavor: tc.flavor, Version: tc.version}).Start()
				require.NoError(t, err)
				t.Cleanup(func() { srv.Close() })
				c, err := kong.NewClient(kong.String(srv.URL), &http.Client{})
				require.NoError(t, err)
				return srv, c
			}
			discoveredKong, dc := kongOf()
			discovered := NewDBLessGateway(discoveredKong.URL, dc, logr.Discard())
			discovered.Router, discovered.Version = tc.flavor, tc.version
			staticKong, sc := kongOf()
			static := NewDetectingGateway(staticKong.URL, sc, nil, logr.Discard())
			// What the other gateways said: the target was rendered for the router they run.
			static.Flavors = NewRouterFlavors(nil)
			static.Flavors.Report("http://other", map[bool]string{true: "expressions", false: "traditional_compatible"}[hasExpressionRoutes(tc.target)])
			for _, g := range []struct {
				name string
				gw   Gateway
				kong *kongemu.Server
			}{{"discovered", discovered, discoveredKong}, {"static", static, staticKong}} {
				err := g.gw.Sync(context.Background(), &Target{State: tc.target})
				if tc.refused {
					require.ErrorContains(t, err, "to be rendered again", g.name)
					require.Zero(t, g.kong.RequestCount(http.MethodPost, "/config"), "%s: not sent", g.name)
				} else {
					require.NoError(t, err, g.name)
					require.Equal(t, 1, g.kong.RequestCount(http.MethodPost, "/config"), "%s: sent", g.name)
				}
			}
		})
	}
}

// The translation's Kong version is the oldest of the gateways that answered (one
// configuration goes to all of them), forgotten with the gateway that said it; a change of
// it asks for a new round, as a change of router does.
func TestRouterFlavorsKongVersionIsTheOldestGateways(t *testing.T) {
	changes := 0
	f := NewRouterFlavors(func() { changes++ })
	require.True(t, f.KongVersion().EQ(semver.Version{}), "no gateway answered: unknown")

	f.ReportRoot("a", Root{RouterFlavor: "traditional_compatible", Version: "3.11.1"})
	require.Equal(t, "3.11.1", f.KongVersion().String())
	require.Equal(t, 1, changes)
	// Kong Gateway Enterprise's fourth number is dropped; 3.9.1.0 is older.
	f.ReportRoot("b", Root{RouterFlavor: "traditional_compatible", Version: "3.9.1.0"})
	require.Equal(t, "3.9.1", f.KongVersion().String())
	require.Equal(t, 2, changes)
	f.ReportRoot("b", Root{RouterFlavor: "traditional_compatible", Version: "3.9.1.0"})
	require.Equal(t, 2, changes, "the same answer asks for nothing")
	// A gateway upgraded in place.
	f.ReportRoot("b", Root{RouterFlavor: "traditional_compatible", Version: "3.12.0"})
	require.Equal(t, "3.11.1", f.KongVersion().String())
	require.Equal(t, 3, changes)
	// A version that does not parse is none.
	f.ReportRoot("c", Root{RouterFlavor: "traditional_compatible", Version: "next"})
	require.Equal(t, "3.11.1", f.KongVersion().String())
	f.KeepOnly(map[string]bool{"b": true, "c": true})
	require.Equal(t, "3.12.0", f.KongVersion().String())
	require.Equal(t, 4, changes)
	// Report (the router only) forgets the version the gateway said.
	f.Report("b", "traditional_compatible")
	require.True(t, f.KongVersion().EQ(semver.Version{}))
	var none *RouterFlavors
	require.True(t, none.KongVersion().EQ(semver.Version{}))
	none.ReportRoot("a", Root{Version: "3.9.0"})
}

// Kong's listens are read from GET / as Kong reports them (stream_listen off: {}), kept per
// gateway, forgotten with the gateway, and a change asks for a round (the Gateways'
// listener status depends on them).
func TestRouterFlavorsKeepTheGatewaysListens(t *testing.T) {
	e := kongemu.New(kongemu.Options{StreamListen: []string{"0.0.0.0:9000 ssl", "0.0.0.0:9999 udp reuseport"}})
	srv, err := e.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	c, err := kong.NewClient(&srv.URL, &http.Client{})
	require.NoError(t, err)
	root, err := ReadRoot(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, &KongListens{
		Proxy:  []KongListen{{Port: 8000}, {Port: 8443, SSL: true}},
		Stream: []KongListen{{Port: 9000, SSL: true}, {Port: 9999, UDP: true}},
	}, root.Listens)

	off := kongemu.New(kongemu.Options{})
	srvOff, err := off.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = srvOff.Close() })
	c, err = kong.NewClient(&srvOff.URL, &http.Client{})
	require.NoError(t, err)
	rootOff, err := ReadRoot(context.Background(), c)
	require.NoError(t, err)
	require.Empty(t, rootOff.Listens.Stream, "stream_listen off")

	changes := 0
	f := NewRouterFlavors(func() { changes++ })
	f.ReportRoot("a", root)
	f.ReportRoot("b", rootOff)
	require.Equal(t, []KongListens{*root.Listens, *rootOff.Listens}, f.Listens())
	require.Equal(t, 2, changes, "each new gateway's listens ask for a round")
	f.ReportRoot("b", rootOff)
	require.Equal(t, 2, changes, "the same listens again ask for nothing")
	f.Report("b", rootOff.RouterFlavor)
	require.Len(t, f.Listens(), 2, "an answer without listens keeps those known")
	f.KeepOnly(map[string]bool{"b": true})
	require.Equal(t, []KongListens{*rootOff.Listens}, f.Listens())
	require.Equal(t, 3, changes)
	var none *RouterFlavors
	require.Empty(t, none.Listens())
}

// port_maps as GET / says it ("host:kong" strings): Kong port -> host port.
func TestReadPortMaps(t *testing.T) {
	require.Equal(t, map[int]int{8000: 80, 8443: 443}, readPortMaps([]any{"80:8000", " 443:8443 "}))
	require.Nil(t, readPortMaps(nil), "no port_maps")
	require.Nil(t, readPortMaps(map[string]any{}), "an empty list, as Kong writes it")
	require.Equal(t, map[int]int{8000: 80}, readPortMaps([]any{"80:8000", "bad", 7}), "what is unreadable is left out")
}
