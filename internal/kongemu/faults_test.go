package kongemu

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFaultStatusForNextN(t *testing.T) {
	cases := []struct {
		name       string
		fault      Fault
		method     string
		path       string
		wantStatus []int
		retryAfter string
	}{
		{"500 twice", Fault{Count: 2, Status: 500}, "GET", "/status", []int{500, 500, 200}, ""},
		{"503 once", Fault{Count: 1, Status: 503, RetryAfter: 5}, "GET", "/", []int{503, 200}, "5"},
		{"429 default retry-after", Fault{Count: 1, Status: 429}, "GET", "/", []int{429, 200}, "1"},
		{"restricted to POST /config", Fault{Count: 1, Status: 500, Method: "POST", PathPrefix: "/config"}, "GET", "/status", []int{200, 200}, ""},
		{"matching prefix", Fault{Count: 1, Status: 500, PathPrefix: "/sta"}, "GET", "/status", []int{500, 200}, ""},
		{"unlimited", Fault{Status: 503}, "GET", "/", []int{503, 503, 503}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := New(Options{})
			e.InjectFault(c.fault)
			for i, want := range c.wantStatus {
				st, _, res := call(t, e, c.method, c.path, nil)
				require.Equal(t, want, st, "request %d", i)
				if i == 0 && c.retryAfter != "" {
					require.Equal(t, c.retryAfter, res.Header.Get("Retry-After"))
				}
			}
			e.ClearFaults()
			st, _, _ := call(t, e, c.method, c.path, nil)
			require.Equal(t, 200, st)
		})
	}
}

func TestFaultFractionIsDeterministic(t *testing.T) {
	run := func(seed uint64) []int {
		e := New(Options{Seed: seed})
		e.InjectFault(Fault{Fraction: 0.5, Status: 500})
		var out []int
		for i := 0; i < 40; i++ {
			st, _, _ := call(t, e, "GET", "/status", nil)
			out = append(out, st)
		}
		return out
	}
	a, b := run(7), run(7)
	require.Equal(t, a, b)
	n500 := 0
	for _, s := range a {
		if s == 500 {
			n500++
		}
	}
	require.Greater(t, n500, 5)
	require.Less(t, n500, 35)
	require.NotEqual(t, run(7), run(8))
}

func TestFaultLatencyAndDrop(t *testing.T) {
	e := New(Options{})
	srv, err := e.Start()
	require.NoError(t, err)
	defer srv.Close()

	e.InjectFault(Fault{Count: 1, Latency: 150 * time.Millisecond})
	start := time.Now()
	res, err := http.Get(srv.URL + "/status")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)

	e.InjectFault(Fault{Count: 1, Drop: true})
	_, err = http.Get(srv.URL + "/status")
	require.Error(t, err)
	res, err = http.Get(srv.URL + "/status")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
}

func TestRejectNextConfig(t *testing.T) {
	e := New(Options{})
	e.RejectNextConfig(ConfigRejection{EntityType: "route", EntityName: "r1",
		EntityID: "0f1a2b3c-0000-4000-8000-000000000001", EntityTags: []string{"k8s-name:ing"},
		Field: "paths.1", Message: "bad path"})
	st, b, _ := post(t, e, "/config?flatten_errors=1", "application/json", okConfig)
	require.Equal(t, 400, st)
	require.Equal(t, jsonOf(t, `[{"entity_type":"route","entity_id":"0f1a2b3c-0000-4000-8000-000000000001",
		"entity_name":"r1","entity_tags":["k8s-name:ing"],
		"entity":{"id":"0f1a2b3c-0000-4000-8000-000000000001","name":"r1","tags":["k8s-name:ing"]},
		"errors":[{"type":"field","field":"paths.1","message":"bad path"}]}]`), b["flattened_errors"])
	require.Equal(t, emptyHash, e.ConfigHash())
	st, _, _ = post(t, e, "/config?flatten_errors=1", "application/json", okConfig)
	require.Equal(t, 201, st, "only the next POST /config is rejected")
}

func TestAuditAndRequests(t *testing.T) {
	e := New(Options{})
	call(t, e, "GET", "/status", nil)
	post(t, e, "/config", "application/json", `{"_format_version":"3.0","services":[{"name":"x"}]}`) // invalid
	require.Empty(t, e.Audit(), "reads and rejected writes change nothing")
	mark := e.AuditMark()
	post(t, e, "/config", "application/json", okConfig)
	got := e.AuditSince(mark)
	require.Len(t, got, 1)
	require.Equal(t, "POST", got[0].Method)
	require.Equal(t, "/config", got[0].Path)
	require.Equal(t, "config", got[0].Entity)
	require.Equal(t, e.ConfigHash(), got[0].ID)
	require.False(t, got[0].Time.IsZero())

	reqs := e.Requests()
	require.Equal(t, 1, reqs["GET /status"])
	require.Equal(t, 2, reqs["POST /config"])
	require.Equal(t, 2, e.RequestCount("POST", "/config"))
	require.Equal(t, 3, e.RequestCount("", "/"))
	e.ResetAudit()
	require.Empty(t, e.Audit())
	require.Empty(t, e.Requests())
}
