package kongemu

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// konnectDo sends a request to the server with client c and decodes the JSON answer.
func konnectDo(t *testing.T, c *http.Client, method, u string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, u, rd)
	require.NoError(t, err)
	res, err := c.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var out map[string]any
	if len(bytes.TrimSpace(raw)) > 0 {
		require.NoError(t, json.Unmarshal(raw, &out), "%s %s: %q", method, u, raw)
	}
	return res.StatusCode, out
}

func startKonnect(t *testing.T, opts KonnectOptions) *KonnectServer {
	t.Helper()
	srv, err := NewKonnect(opts).Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func TestKonnectMTLS(t *testing.T) {
	srv := startKonnect(t, KonnectOptions{ControlPlaneIDs: []string{"cp1"}})
	u := srv.ControlPlaneURL("cp1") + "/services?size=1"

	// With the client certificate: KIC's connectivity check answers.
	st, body := konnectDo(t, srv.Client(nil), http.MethodGet, u, nil)
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, []any{}, body["data"])

	// Without one, and with one from another CA: the handshake is refused.
	noCert := srv.Client(nil)
	noCert.Transport.(*http.Transport).TLSClientConfig.Certificates = nil
	other, err := NewKonnectClientCert()
	require.NoError(t, err)
	for _, c := range []*http.Client{noCert, srv.Client(&other.Certificate)} {
		res, err := c.Get(u)
		if err == nil {
			res.Body.Close()
		}
		require.Error(t, err)
	}
	for _, r := range srv.Requests() {
		require.Equal(t, "/kic/api/control-planes/cp1/services", r.Path, "refused clients reach no handler")
	}

	// Served with a TLS configuration that does not verify the client: 401.
	req := httptest.NewRequest(http.MethodGet, "/kic/api/control-planes/cp1/services", nil)
	req.TLS = &tls.ConnectionState{}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	require.Equal(t, http.StatusUnauthorized, rec.Code)

	// An unknown control plane, and a path outside any: 404 with a JSON message.
	st, body = konnectDo(t, srv.Client(nil), http.MethodGet, srv.ControlPlaneURL("nope")+"/services", nil)
	require.Equal(t, http.StatusNotFound, st)
	require.Contains(t, body["message"], "nope")
	st, body = konnectDo(t, srv.Client(nil), http.MethodGet, srv.URL+"/v2/control-planes", nil)
	require.Equal(t, http.StatusNotFound, st)
	require.NotEmpty(t, body["message"])
}

// TestKonnectNodes drives the nodes API as KIC's node agent does: create (with and without
// an id), list all through the cursor pages, update, delete.
func TestKonnectNodes(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	srv := startKonnect(t, KonnectOptions{ControlPlaneIDs: []string{"cp1"}, NodesPageSize: 2, Now: clock.Now})
	c := srv.Client(nil)
	base := srv.ControlPlaneURL("cp1") + "/v1/kic-nodes"

	kicID := "6f9b1c3e-1f0a-4a7e-9d55-0d2b8c1a2f00"
	st, body := konnectDo(t, c, http.MethodPost, base, map[string]any{"id": kicID, "hostname": "kong/konductor-0",
		"type": KonnectNodeIngressController, "last_ping": 1_700_000_000, "version": "kong-ingress-controller/3.5.0",
		"status": "INGRESS_CONTROLLER_STATE_OPERATIONAL"})
	require.Equal(t, http.StatusCreated, st)
	item := body["item"].(map[string]any)
	require.Equal(t, kicID, item["id"])
	require.Equal(t, float64(1_700_000_000), item["created_at"])
	require.Equal(t, item["created_at"], item["updated_at"])
	require.Equal(t, "", item["config_hash"])

	for i, host := range []string{"gateway_10.0.0.1:8444", "gateway_10.0.0.2:8444", "gateway_10.0.0.3:8444", "gateway_10.0.0.4:8444"} {
		st, body = konnectDo(t, c, http.MethodPost, base, map[string]any{"hostname": host, "type": KonnectNodeKongProxy,
			"last_ping": 1_700_000_000 + i, "version": "3.10.0"})
		require.Equal(t, http.StatusCreated, st)
		require.True(t, isUUID(body["item"].(map[string]any)["id"].(string)), "POST without id assigns one")
	}

	// KIC's ListAllNodes: follow page.next_cursor while page.has_next_page.
	var hosts []string
	cursor, pages := "", 0
	for {
		u := base
		if cursor != "" {
			u += "?page.next_cursor=" + url.QueryEscape(cursor)
		}
		st, body = konnectDo(t, c, http.MethodGet, u, nil)
		require.Equal(t, http.StatusOK, st)
		pages++
		for _, it := range body["items"].([]any) {
			hosts = append(hosts, it.(map[string]any)["hostname"].(string))
		}
		page := body["page"].(map[string]any)
		require.Equal(t, float64(5), page["total_count"])
		if !page["has_next_page"].(bool) {
			require.Equal(t, "", page["next_cursor"])
			break
		}
		cursor = page["next_cursor"].(string)
	}
	require.Equal(t, 3, pages)
	require.Equal(t, []string{"kong/konductor-0", "gateway_10.0.0.1:8444", "gateway_10.0.0.2:8444",
		"gateway_10.0.0.3:8444", "gateway_10.0.0.4:8444"}, hosts)
	// The older page.number form, and page.size.
	st, body = konnectDo(t, c, http.MethodGet, base+"?page.number=3", nil)
	require.Equal(t, http.StatusOK, st)
	require.Len(t, body["items"], 1)
	st, body = konnectDo(t, c, http.MethodGet, base+"?page.size=10", nil)
	require.Equal(t, http.StatusOK, st)
	require.Len(t, body["items"], 5)
	require.Equal(t, false, body["page"].(map[string]any)["has_next_page"])

	// Update: a new status and ping; created_at stays.
	clock.Add(time.Minute)
	st, body = konnectDo(t, c, http.MethodPut, base+"/"+kicID, map[string]any{"hostname": "kong/konductor-0",
		"type": KonnectNodeIngressController, "last_ping": 1_700_000_060, "version": "kong-ingress-controller/3.5.0",
		"status": "INGRESS_CONTROLLER_STATE_OPERATIONAL_KONNECT_OUT_OF_SYNC"})
	require.Equal(t, http.StatusOK, st)
	item = body["item"].(map[string]any)
	require.Equal(t, float64(1_700_000_000), item["created_at"])
	require.Equal(t, float64(1_700_000_060), item["updated_at"])
	st, body = konnectDo(t, c, http.MethodGet, base+"/"+kicID, nil)
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, "INGRESS_CONTROLLER_STATE_OPERATIONAL_KONNECT_OUT_OF_SYNC", body["status"], "GET of a node answers it bare")

	// Refusals: unknown node, duplicate id, bad type or status.
	st, _ = konnectDo(t, c, http.MethodPut, base+"/"+"00000000-0000-4000-8000-000000000000",
		map[string]any{"hostname": "h", "type": KonnectNodeKongProxy})
	require.Equal(t, http.StatusNotFound, st)
	st, _ = konnectDo(t, c, http.MethodPost, base, map[string]any{"id": kicID, "hostname": "h", "type": KonnectNodeIngressController})
	require.Equal(t, http.StatusConflict, st)
	st, _ = konnectDo(t, c, http.MethodPost, base, map[string]any{"hostname": "h", "type": "kic"})
	require.Equal(t, http.StatusBadRequest, st)
	st, _ = konnectDo(t, c, http.MethodPost, base, map[string]any{"hostname": "h", "type": KonnectNodeKongProxy, "status": "FINE"})
	require.Equal(t, http.StatusBadRequest, st)

	// Delete the gateways.
	for _, n := range srv.Nodes("cp1") {
		if n.Type == KonnectNodeKongProxy {
			st, _ = konnectDo(t, c, http.MethodDelete, base+"/"+n.ID, nil)
			require.Equal(t, http.StatusNoContent, st)
		}
	}
	nodes := srv.Nodes("cp1")
	require.Len(t, nodes, 1)
	require.Equal(t, kicID, nodes[0].ID)
	require.Equal(t, int64(1_700_000_060), nodes[0].LastPing)
	st, _ = konnectDo(t, c, http.MethodDelete, base+"/"+nodes[0].ID, nil)
	require.Equal(t, http.StatusNoContent, st)
	st, _ = konnectDo(t, c, http.MethodDelete, base+"/"+nodes[0].ID, nil)
	require.Equal(t, http.StatusNotFound, st)
	require.Empty(t, srv.Nodes("cp1"))
	require.Equal(t, 8, srv.RequestCount(http.MethodPost, "/v1/kic-nodes"), "refused ones included")
}

func TestKonnectLicense(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	srv := startKonnect(t, KonnectOptions{ControlPlaneIDs: []string{"cp1", "cp2"}, Now: clock.Now})
	c := srv.Client(nil)
	u := srv.ControlPlaneURL("cp1") + "/v1/licenses"

	st, body := konnectDo(t, c, http.MethodGet, u, nil)
	require.Equal(t, http.StatusNotFound, st, "no license: 404")
	require.NotEmpty(t, body["message"])

	srv.SetLicense("cp1", `{"license":{"payload":{"license_expiration_date":"2099-01-01"}}}`)
	st, body = konnectDo(t, c, http.MethodGet, u, nil)
	require.Equal(t, http.StatusOK, st)
	items := body["items"].([]any)
	require.Len(t, items, 1)
	l := items[0].(map[string]any)
	require.Contains(t, l["payload"], "2099-01-01")
	require.Equal(t, float64(1_700_000_000), l["updated_at"])
	require.Equal(t, float64(1_700_000_000), l["created_at"])
	id := l["id"].(string)
	require.NotEmpty(t, id)

	clock.Add(time.Hour)
	srv.SetLicense("cp1", `{"license":{"payload":{"license_expiration_date":"2100-01-01"}}}`)
	_, body = konnectDo(t, c, http.MethodGet, u, nil)
	l = body["items"].([]any)[0].(map[string]any)
	require.Equal(t, id, l["id"])
	require.Equal(t, float64(1_700_003_600), l["updated_at"])
	require.Equal(t, float64(1_700_000_000), l["created_at"])

	st, _ = konnectDo(t, c, http.MethodGet, srv.ControlPlaneURL("cp2")+"/v1/licenses", nil)
	require.Equal(t, http.StatusNotFound, st, "licenses are per control plane")
	srv.SetLicense("cp1", "")
	st, _ = konnectDo(t, c, http.MethodGet, u, nil)
	require.Equal(t, http.StatusNotFound, st)
	require.Nil(t, srv.License("cp1"))
}

// TestKonnectFaults: Konnect failing, slow, down (requests dropped, then connections
// refused), and back.
func TestKonnectFaults(t *testing.T) {
	srv := startKonnect(t, KonnectOptions{ControlPlaneIDs: []string{"cp1"}})
	c := srv.Client(nil)
	u := srv.ControlPlaneURL("cp1") + "/services?size=1"

	srv.SetFailing(http.StatusServiceUnavailable)
	st, body := konnectDo(t, c, http.MethodGet, u, nil)
	require.Equal(t, http.StatusServiceUnavailable, st)
	require.NotEmpty(t, body["message"])
	st, _ = konnectDo(t, c, http.MethodGet, srv.ControlPlaneURL("cp1")+"/v1/licenses", nil)
	require.Equal(t, http.StatusServiceUnavailable, st, "every path fails")
	srv.SetFailing(http.StatusTooManyRequests)
	res, err := c.Get(u)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, "1", res.Header.Get("Retry-After"))
	srv.SetFailing(0)
	st, _ = konnectDo(t, c, http.MethodGet, u, nil)
	require.Equal(t, http.StatusOK, st)

	srv.SetDelay(200 * time.Millisecond)
	start := time.Now()
	st, _ = konnectDo(t, c, http.MethodGet, u, nil)
	require.Equal(t, http.StatusOK, st)
	require.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
	srv.SetDelay(0)

	// The handler drops requests.
	srv.Konnect.SetDown(true)
	_, err = c.Get(u)
	require.Error(t, err)
	srv.Konnect.SetDown(false)
	st, _ = konnectDo(t, c, http.MethodGet, u, nil)
	require.Equal(t, http.StatusOK, st)

	// The server refuses connections, open ones included, then listens again.
	require.NoError(t, srv.SetDown(true))
	_, err = c.Get(u)
	require.Error(t, err)
	require.True(t, errors.Is(err, syscall.ECONNREFUSED), "%v", err)
	require.NoError(t, srv.SetDown(false))
	st, _ = konnectDo(t, c, http.MethodGet, u, nil)
	require.Equal(t, http.StatusOK, st)

	// A control plane's own faults still apply to its core entities.
	srv.ControlPlane("cp1").FailNext(1, http.StatusInternalServerError)
	st, _ = konnectDo(t, c, http.MethodGet, u, nil)
	require.Equal(t, http.StatusInternalServerError, st)
	st, _ = konnectDo(t, c, http.MethodGet, u, nil)
	require.Equal(t, http.StatusOK, st)

	var statuses []int
	for _, r := range srv.Requests() {
		// Go's transport retries a GET whose reused connection closed without an answer.
		if r.Rel == "/services" && (r.Status != 0 || statuses[len(statuses)-1] != 0) {
			statuses = append(statuses, r.Status)
		}
	}
	require.Equal(t, []int{503, 429, 200, 200, 0, 200, 200, 500, 200}, statuses)
}

// TestKonnectConsumerGroupsV1 covers the /v1 consumer group paths go-database-reconciler
// calls in Konnect mode beyond the round trip: get, members, the rate-limiting-advanced
// override and PUT of a membership.
func TestKonnectConsumerGroupsV1(t *testing.T) {
	srv := startKonnect(t, KonnectOptions{ControlPlaneIDs: []string{"cp1"}})
	c := srv.Client(nil)
	base := srv.ControlPlaneURL("cp1")

	st, body := konnectDo(t, c, http.MethodPost, base+"/v1/consumer-groups", map[string]any{"name": "gold", "tags": []string{"t"}})
	require.Equal(t, http.StatusCreated, st)
	gid := body["item"].(map[string]any)["id"].(string)
	st, body = konnectDo(t, c, http.MethodPut, base+"/consumers/alice", map[string]any{})
	require.Equal(t, http.StatusOK, st, "%v", body)
	cid := body["id"].(string)

	st, _ = konnectDo(t, c, http.MethodPost, base+"/v1/consumers/"+cid+"/groups/"+gid+"/members", nil)
	require.Equal(t, http.StatusCreated, st)
	st, _ = konnectDo(t, c, http.MethodPut, base+"/v1/consumers/"+cid+"/groups/"+gid+"/members", nil)
	require.Equal(t, http.StatusOK, st, "PUT of a membership held is fine")
	st, body = konnectDo(t, c, http.MethodGet, base+"/v1/consumer-groups/"+gid+"/members", nil)
	require.Equal(t, http.StatusOK, st)
	require.Len(t, body["items"], 1)
	st, body = konnectDo(t, c, http.MethodGet, base+"/v1/consumer-groups/"+gid, nil)
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, "gold", body["item"].(map[string]any)["name"])
	st, body = konnectDo(t, c, http.MethodGet, base+"/v1/consumer-groups", nil)
	require.Equal(t, http.StatusOK, st)
	require.Len(t, body["items"], 1)

	rla := base + "/v1/consumer-groups/" + gid + "/rate-limiting-advanced-config"
	st, _ = konnectDo(t, c, http.MethodGet, rla, nil)
	require.Equal(t, http.StatusNotFound, st)
	st, body = konnectDo(t, c, http.MethodPost, rla, map[string]any{"limit": []int{10}, "window_size": []int{60}, "window_type": "sliding"})
	require.Equal(t, http.StatusCreated, st)
	require.Equal(t, gid, body["item"].(map[string]any)["consumer_group_id"])
	st, body = konnectDo(t, c, http.MethodPut, rla, map[string]any{"limit": []int{20}, "window_size": []int{60}})
	require.Equal(t, http.StatusOK, st)
	require.Equal(t, []any{float64(20)}, body["item"].(map[string]any)["limit"])

	st, _ = konnectDo(t, c, http.MethodDelete, base+"/v1/consumers/"+cid+"/groups/"+gid+"/members", nil)
	require.Equal(t, http.StatusNoContent, st)
	require.Empty(t, srv.ControlPlane("cp1").Entities("consumer_group_consumers"))
	st, _ = konnectDo(t, c, http.MethodDelete, base+"/v1/consumer-groups/"+gid, nil)
	require.Equal(t, http.StatusNoContent, st)
	st, _ = konnectDo(t, c, http.MethodGet, rla, nil)
	require.Equal(t, http.StatusNotFound, st)

	// Entity schemas: the defaults go-kong reads; none for an entity Konnect names no schema for.
	st, body = konnectDo(t, c, http.MethodGet, base+"/v1/schemas/json/service", nil)
	require.Equal(t, http.StatusOK, st)
	props := body["properties"].(map[string]any)
	require.Equal(t, float64(60000), props["connect_timeout"].(map[string]any)["default"])
	st, body = konnectDo(t, c, http.MethodGet, base+"/v1/schemas/json/plugin", nil)
	require.Equal(t, http.StatusNotFound, st)
	require.NotEmpty(t, body["message"])
}
