package dbless

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongstate"
)

// fakeKong is a minimal DB-less Admin API: POST /config and GET /status, nothing else.
type fakeKong struct {
	mu       sync.Mutex
	hash     string
	posts    [][]byte
	held     []byte // what GET /config exports: the last configuration taken
	statuses int
	// configReads counts GET /config
	configReads int
	reject      func(body []byte) bool // answer 400 for these bodies
	fail        int                    // answer 503 to the next fail requests
}

func (f *fakeKong) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail > 0 {
		f.fail--
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"message":"unavailable"}`)
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/status":
		f.statuses++
		_, _ = io.WriteString(w, `{"server":{},"memory":{},"configuration_hash":"`+f.hash+`"}`)
	case r.Method == http.MethodPost && r.URL.Path == "/config":
		if r.URL.Query().Get("check_hash") != "1" || r.URL.Query().Get("flatten_errors") != "1" {
			http.Error(w, "missing query", http.StatusTeapot)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if len(r.TransferEncoding) > 0 || r.ContentLength != int64(len(body)) {
			// Sent as go-kong sends a []byte: with its length, not chunked.
			http.Error(w, fmt.Sprintf("Content-Length %d, Transfer-Encoding %v, %d bytes", r.ContentLength, r.TransferEncoding, len(body)), http.StatusLengthRequired)
			return
		}
		var wrapped struct {
			Config *string `json:"config"`
		}
		if json.Unmarshal(body, &wrapped) != nil || wrapped.Config == nil {
			http.Error(w, "expected {\"config\": \"...\"}", http.StatusTeapot)
			return
		}
		body = []byte(*wrapped.Config)
		f.posts = append(f.posts, body)
		if f.reject != nil && f.reject(body) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"code":14,"name":"invalid declarative configuration","message":"declarative config is invalid: {}",
			  "flattened_errors":[{"entity_type":"route","entity_name":"default.bad.svc..80",
			  "entity_tags":["k8s-name:bad","k8s-namespace:default","k8s-kind:Ingress","k8s-uid:u-1","k8s-group:networking.k8s.io","k8s-version:v1"],
			  "errors":[{"type":"field","field":"paths.1","message":"invalid regex: '~/('"}]}]}`)
			return
		}
		sum := md5.Sum(body)
		f.hash = hex.EncodeToString(sum[:])
		f.held = body
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{}`)
	case r.Method == http.MethodGet && r.URL.Path == "/config":
		f.configReads++
		b, _ := json.Marshal(map[string]string{"config": string(f.held)})
		_, _ = w.Write(b)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeKong) restart() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hash = EmptyConfigurationHash
}

func (f *fakeKong) counts() (posts, statuses int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.posts), f.statuses
}

func newGateway(t *testing.T, f *fakeKong) *Gateway {
	t.Helper()
	f.hash = EmptyConfigurationHash
	return connect(t, f)
}

// connect is a new Gateway (a restarted controller) for the Kong f, whatever it holds.
func connect(t *testing.T, f *fakeKong) *Gateway {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := kong.NewClient(kong.String(srv.URL), srv.Client())
	require.NoError(t, err)
	return New(c)
}

func TestPushSkipsUnchangedConfiguration(t *testing.T) {
	f := &fakeKong{}
	g := newGateway(t, f)
	ctx := context.Background()

	out, err := g.Push(ctx, []byte(`{"_format_version":"3.0"}`))
	require.NoError(t, err)
	require.Equal(t, Pushed, out)

	out, err = g.Push(ctx, []byte(`{"_format_version":"3.0"}`))
	require.NoError(t, err)
	require.Equal(t, Unchanged, out)
	posts, statuses := f.counts()
	require.Equal(t, 1, posts, "an unchanged configuration is not sent again")
	require.Equal(t, 3, statuses, "one GET /status before the first push (what the gateway holds), one after it (to learn Kong's hash), one for the unchanged push")

	out, err = g.Push(ctx, []byte(`{"_format_version":"3.0","services":[]}`))
	require.NoError(t, err)
	require.Equal(t, Pushed, out)
	posts, _ = f.counts()
	require.Equal(t, 2, posts)
}

// KIC's --enable-reverse-sync: a configuration the gateway holds is posted again; one it
// refused is still not.
func TestPushBodyAgainResendsWhatTheGatewayHolds(t *testing.T) {
	f := &fakeKong{reject: func(b []byte) bool { return string(b) == "bad" }}
	g := newGateway(t, f)
	ctx := context.Background()
	body := func(s string) kongstate.Body { return kongstate.BodyOf(Body([]byte(s))) }
	out, err := g.PushBodyAgain(ctx, body("good"))
	require.NoError(t, err)
	require.Equal(t, Pushed, out)
	out, err = g.PushBodyAgain(ctx, body("good"))
	require.NoError(t, err)
	require.Equal(t, Pushed, out, "sent again")
	posts, _ := f.counts()
	require.Equal(t, 2, posts)

	_, err = g.PushBodyAgain(ctx, body("bad"))
	require.Error(t, err)
	out, err = g.PushBodyAgain(ctx, body("bad"))
	require.Error(t, err)
	require.Equal(t, Unchanged, out, "a refused configuration is not sent again")
	posts, _ = f.counts()
	require.Equal(t, 3, posts)
}

func TestPushAgainAfterGatewayRestart(t *testing.T) {
	f := &fakeKong{}
	g := newGateway(t, f)
	ctx := context.Background()
	cfg := []byte(`{"_format_version":"3.0","upstreams":[{"name":"kong"}]}`)

	_, err := g.Push(ctx, cfg)
	require.NoError(t, err)
	f.restart()
	out, err := g.Push(ctx, cfg)
	require.NoError(t, err)
	require.Equal(t, Pushed, out, "a gateway reporting the all-zero hash gets its configuration again")
	posts, _ := f.counts()
	require.Equal(t, 2, posts)
	require.Equal(t, cfg, f.posts[1])
}

// Another writer (a previous leader's late POST, a person) replaced the configuration: Kong's
// hash is no longer the one it reported after our push, so the unchanged configuration is sent
// again.
func TestPushAgainAfterAnotherWriter(t *testing.T) {
	f := &fakeKong{}
	g := newGateway(t, f)
	ctx := context.Background()
	cfg := []byte(`{"_format_version":"3.0","upstreams":[{"name":"mine"}]}`)
	_, err := g.Push(ctx, cfg)
	require.NoError(t, err)

	other := md5.Sum([]byte("someone else's configuration"))
	f.mu.Lock()
	f.hash = hex.EncodeToString(other[:])
	f.mu.Unlock()

	out, err := g.Push(ctx, cfg)
	require.NoError(t, err)
	require.Equal(t, Pushed, out)
	require.Equal(t, cfg, f.posts[len(f.posts)-1])

	out, err = g.Push(ctx, cfg)
	require.NoError(t, err)
	require.Equal(t, Unchanged, out, "back in step: nothing more to send")
}

func TestRejectedConfigurationKeepsLastGoodAndIsNotResent(t *testing.T) {
	f := &fakeKong{reject: func(b []byte) bool { return string(b) == "bad" }}
	g := newGateway(t, f)
	ctx := context.Background()

	_, err := g.Push(ctx, []byte("good"))
	require.NoError(t, err)

	_, err = g.Push(ctx, []byte("bad"))
	var rej *RejectedError
	require.True(t, errors.As(err, &rej), "a 400 is a *RejectedError, got %v", err)
	require.Len(t, rej.Entities, 1)
	ent := rej.Entities[0]
	require.Equal(t, "route", ent.EntityType)
	require.Equal(t, "default.bad.svc..80", ent.EntityName)
	require.Contains(t, ent.Tags, "k8s-uid:u-1")
	require.Equal(t, []FieldError{{Field: "paths.1", Message: "invalid regex: '~/('"}}, ent.Errors)
	require.Contains(t, err.Error(), `route "default.bad.svc..80" paths.1: invalid regex`)

	// The same bad configuration is not sent again; the rejection is still reported.
	out, err := g.Push(ctx, []byte("bad"))
	require.ErrorAs(t, err, &rej)
	require.Equal(t, Unchanged, out)
	posts, _ := f.counts()
	require.Equal(t, 2, posts)

	// A restarted gateway gets the last good configuration back, not the rejected one.
	f.restart()
	out, err = g.Push(ctx, []byte("bad"))
	require.ErrorAs(t, err, &rej)
	require.Equal(t, Restored, out)
	require.Equal(t, "good", string(f.posts[len(f.posts)-1]))

	// A fixed configuration goes through.
	out, err = g.Push(ctx, []byte("fixed"))
	require.NoError(t, err)
	require.Equal(t, Pushed, out)
}

// Configurations are told apart by content, not size: one of the size of a refused one, or of
// the last good one, is sent.
func TestConfigurationsOfTheSameSizeAreToldApart(t *testing.T) {
	f := &fakeKong{reject: func(b []byte) bool { return string(b) == "bad1" }}
	g := newGateway(t, f)
	ctx := context.Background()

	_, err := g.Push(ctx, []byte("good"))
	require.NoError(t, err)
	_, err = g.Push(ctx, []byte("bad1"))
	var rej *RejectedError
	require.ErrorAs(t, err, &rej)

	out, err := g.Push(ctx, []byte("bad2"))
	require.NoError(t, err)
	require.Equal(t, Pushed, out)
	out, err = g.Push(ctx, []byte("good"))
	require.NoError(t, err)
	require.Equal(t, Pushed, out)
	out, err = g.Push(ctx, []byte("good"))
	require.NoError(t, err)
	require.Equal(t, Unchanged, out)
	out, err = g.Push(ctx, []byte("bad1"))
	require.ErrorAs(t, err, &rej)
	require.Equal(t, Unchanged, out)
	posts, _ := f.counts()
	require.Equal(t, 4, posts)
}

func TestServerErrorsAreNotRejections(t *testing.T) {
	f := &fakeKong{fail: 1}
	g := newGateway(t, f)
	_, err := g.Push(context.Background(), []byte("cfg"))
	require.Error(t, err)
	var rej *RejectedError
	require.False(t, errors.As(err, &rej), "a 503 is retried, not a rejection")

	// Nothing was recorded: the next push sends the configuration.
	out, err := g.Push(context.Background(), []byte("cfg"))
	require.NoError(t, err)
	require.Equal(t, Pushed, out)
}

func TestUnparsableRejectionKeepsBody(t *testing.T) {
	rej := parseRejection([]byte("not json"))
	require.Equal(t, "not json", rej.Message)
	require.Empty(t, rej.Entities)
}

// With fallback configuration the loop sends the refused configuration and then its fallback
// every round: the refused one is remembered across the fallback's success and not sent again.
func TestRejectionIsRememberedWhenAnotherConfigurationIsTaken(t *testing.T) {
	f := &fakeKong{reject: func(b []byte) bool { return string(b) == "bad" }}
	g := newGateway(t, f)
	ctx := context.Background()

	_, err := g.Push(ctx, []byte("bad"))
	var rej *RejectedError
	require.ErrorAs(t, err, &rej)
	_, err = g.Push(ctx, []byte("fallback"))
	require.NoError(t, err)

	out, err := g.Push(ctx, []byte("bad"))
	require.ErrorAs(t, err, &rej, "still reported as refused")
	require.Equal(t, Unchanged, out)
	out, err = g.Push(ctx, []byte("fallback"))
	require.NoError(t, err)
	require.Equal(t, Unchanged, out)
	posts, _ := f.counts()
	require.Equal(t, 2, posts, "neither is sent again")

	// The memory is bounded: the oldest refusal is forgotten first.
	for i := range rememberRejections {
		f.reject = func([]byte) bool { return true }
		_, err = g.Push(ctx, []byte(fmt.Sprintf("bad-%d", i)))
		require.ErrorAs(t, err, &rej)
	}
	_, err = g.Push(ctx, []byte("bad"))
	require.ErrorAs(t, err, &rej)
	posts, _ = f.counts()
	require.Equal(t, 2+rememberRejections+1, posts, "the first refusal fell out of the memory and was sent again")
}

// A restarted controller whose first configuration is the one the gateway holds sends nothing:
// Kong's configuration_hash is the md5 of the configuration string it was sent.
func TestRestartedControllerDoesNotResendWhatTheGatewayHolds(t *testing.T) {
	f := &fakeKong{}
	ctx := context.Background()
	cfg := []byte(`{"_format_version":"3.0","upstreams":[{"name":"kong"}]}`)
	_, err := newGateway(t, f).Push(ctx, cfg)
	require.NoError(t, err)

	g := connect(t, f) // the controller restarted
	out, err := g.Push(ctx, cfg)
	require.NoError(t, err)
	require.Equal(t, Unchanged, out)
	posts, _ := f.counts()
	require.Equal(t, 1, posts)

	// A different configuration is sent, once.
	out, err = connect(t, f).Push(ctx, []byte(`{"_format_version":"3.0"}`))
	require.NoError(t, err)
	require.Equal(t, Pushed, out)
}

// A restarted controller learns what the gateway holds (GET /config). Its first configuration
// is refused: the gateway keeps what it holds, the refusal is remembered (not sent again), and
// when the gateway later loses its configuration (a Kong restart) it gets back what it held
// before the controller restarted, not nothing.
func TestRestartedControllerRestoresWhatTheGatewayHeld(t *testing.T) {
	f := &fakeKong{reject: func(b []byte) bool { return string(b) == "bad" }}
	ctx := context.Background()
	_, err := newGateway(t, f).Push(ctx, []byte("good"))
	require.NoError(t, err)

	g := connect(t, f)
	_, err = g.Push(ctx, []byte("bad"))
	var rej *RejectedError
	require.ErrorAs(t, err, &rej)
	require.Equal(t, "good", string(g.Held()))
	require.Equal(t, 1, f.configReads)

	out, err := g.Push(ctx, []byte("bad"))
	require.ErrorAs(t, err, &rej)
	require.Equal(t, Unchanged, out, "the refusal is remembered")

	f.restart()
	out, err = g.Push(ctx, []byte("bad"))
	require.ErrorAs(t, err, &rej)
	require.Equal(t, Restored, out)
	require.Equal(t, "good", string(f.posts[len(f.posts)-1]))
	posts, _ := f.counts()
	require.Equal(t, 3, posts, "good, bad once, good restored")
}

// A restarted controller whose configuration is refused sends it once; the fallback it sends
// next is what the gateway already holds (the previous leader's fallback): not sent again.
func TestRestartedControllerDoesNotResendTheFallbackTheGatewayHolds(t *testing.T) {
	f := &fakeKong{reject: func(b []byte) bool { return string(b) == "bad" }}
	ctx := context.Background()
	_, err := newGateway(t, f).Push(ctx, []byte("fallback"))
	require.NoError(t, err)

	g := connect(t, f)
	_, err = g.Push(ctx, []byte("bad"))
	var rej *RejectedError
	require.ErrorAs(t, err, &rej)
	out, err := g.Push(ctx, []byte("fallback"))
	require.NoError(t, err)
	require.Equal(t, Unchanged, out)
	posts, _ := f.counts()
	require.Equal(t, 2, posts, "the fallback once by the first controller, the refused one once by the second")
}

// HoldsOther: whether a configuration would replace one the gateway holds. Nothing held (a
// fresh Kong, or only refused configurations sent): no; the configuration itself held: no;
// anything else held, taken from this process or held when it started: yes.
func TestHoldsOther(t *testing.T) {
	ctx := context.Background()
	body := func(cfg string) kongstate.Body { return kongstate.BodyOf(Body([]byte(cfg))) }
	stub := `{"_format_version":"3.0","upstreams":[{"name":"kong"}]}`

	f := &fakeKong{reject: func(b []byte) bool { return string(b) == "bad" }}
	g := newGateway(t, f)
	holds, err := g.HoldsOther(ctx, body(stub))
	require.NoError(t, err)
	require.False(t, holds, "a fresh Kong holds nothing")
	_, statuses := f.counts()
	require.Equal(t, 1, statuses, "learned before any push")
	_, err = g.Push(ctx, []byte("bad"))
	require.Error(t, err)
	holds, err = g.HoldsOther(ctx, body(stub))
	require.NoError(t, err)
	require.False(t, holds, "Kong keeps nothing of a refused configuration")

	_, err = g.Push(ctx, []byte("good"))
	require.NoError(t, err)
	holds, err = g.HoldsOther(ctx, body(stub))
	require.NoError(t, err)
	require.True(t, holds, "the stub would replace good")
	holds, err = g.HoldsOther(ctx, body("good"))
	require.NoError(t, err)
	require.False(t, holds, "good itself changes nothing")

	// A restarted controller knows what Kong holds without a push: by its hash.
	holds, err = connect(t, f).HoldsOther(ctx, body(stub))
	require.NoError(t, err)
	require.True(t, holds, "held before the controller restarted")
	_, err = g.Push(ctx, []byte(stub))
	require.NoError(t, err)
	holds, err = g.HoldsOther(ctx, body(stub))
	require.NoError(t, err)
	require.False(t, holds, "the stub alone: sending it again changes nothing")
	holds, err = connect(t, f).HoldsOther(ctx, body(stub))
	require.NoError(t, err)
	require.False(t, holds, "the stub, held before the controller restarted")
}
