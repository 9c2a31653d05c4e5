package kongemu

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"

	"github.com/google/uuid"
)

// Konnect's /v1 paths under a control plane: KIC's nodes and license APIs, and the
// consumer group writes of go-database-reconciler in Konnect mode.

// KonnectNode is a node of a control plane, as KIC's node agent reads it
// (internal/konnect/nodes NodeItem).
type KonnectNode struct {
	ID                  string          `json:"id"`
	Version             string          `json:"version"`
	Hostname            string          `json:"hostname"`
	LastPing            int64           `json:"last_ping"`
	Type                string          `json:"type"`
	CreatedAt           int64           `json:"created_at"`
	UpdatedAt           int64           `json:"updated_at"`
	ConfigHash          string          `json:"config_hash"`
	CompatibilityStatus json.RawMessage `json:"compatibility_status,omitempty"`
	Status              string          `json:"status,omitempty"`
}

// The node types KIC registers.
const (
	KonnectNodeIngressController = "ingress-controller"
	KonnectNodeKongProxy         = "kong-proxy"
)

// konnectNodeStatuses are the statuses a node may report (KIC's IngressControllerState).
var konnectNodeStatuses = map[string]bool{
	"INGRESS_CONTROLLER_STATE_UNSPECIFIED":                             true,
	"INGRESS_CONTROLLER_STATE_OPERATIONAL":                             true,
	"INGRESS_CONTROLLER_STATE_PARTIAL_CONFIG_FAIL":                     true,
	"INGRESS_CONTROLLER_STATE_INOPERABLE":                              true,
	"INGRESS_CONTROLLER_STATE_OPERATIONAL_KONNECT_OUT_OF_SYNC":         true,
	"INGRESS_CONTROLLER_STATE_PARTIAL_CONFIG_FAIL_KONNECT_OUT_OF_SYNC": true,
	"INGRESS_CONTROLLER_STATE_INOPERABLE_KONNECT_OUT_OF_SYNC":          true,
	"INGRESS_CONTROLLER_STATE_UNKNOWN":                                 true,
}

type konnectNode struct {
	KonnectNode
	seq int // creation order, the listing order and the cursor
}

// KonnectLicense is a control plane's license, as KIC's license agent reads it.
type KonnectLicense struct {
	ID        string `json:"id"`
	Payload   string `json:"payload"`
	CreatedAt int64  `json:"created_at"`
	UpdatedAt int64  `json:"updated_at"`
}

// Nodes returns control plane cpid's nodes in creation order (nil for an unknown id).
func (k *Konnect) Nodes(cpid string) []KonnectNode {
	cp := k.cps[cpid]
	if cp == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	out := []KonnectNode{}
	for _, n := range cp.sortedNodes() {
		out = append(out, n.KonnectNode)
	}
	return out
}

// SetLicense gives control plane cpid a license with this payload (Kong's license JSON,
// not checked), created at the first call and updated at the emulator's clock; "" removes
// it, so that GET /v1/licenses answers 404. It panics on an unknown control plane.
func (k *Konnect) SetLicense(cpid, payload string) {
	cp := k.cps[cpid]
	if cp == nil {
		panic(fmt.Sprintf("kongemu: SetLicense: unknown control plane %q", cpid))
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if payload == "" {
		cp.license = nil
		return
	}
	now := k.opts.Now().Unix()
	if cp.license == nil {
		cp.license = &KonnectLicense{ID: uuid.NewString(), CreatedAt: now}
	}
	cp.license.Payload, cp.license.UpdatedAt = payload, now
}

// License returns control plane cpid's license, nil if none.
func (k *Konnect) License(cpid string) *KonnectLicense {
	cp := k.cps[cpid]
	if cp == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if cp.license == nil {
		return nil
	}
	l := *cp.license
	return &l
}

// sortedNodes returns the nodes by creation. Caller holds Konnect.mu.
func (cp *konnectCP) sortedNodes() []*konnectNode {
	out := make([]*konnectNode, 0, len(cp.nodes))
	for _, n := range cp.nodes {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

func konnectMsg(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"message": msg})
}

// serveV1 serves /v1/... of control plane cp; segs follow "v1".
func (k *Konnect) serveV1(w http.ResponseWriter, r *http.Request, cp *konnectCP, segs []string) {
	if len(segs) == 0 {
		konnectMsg(w, http.StatusNotFound, "Not found")
		return
	}
	switch segs[0] {
	case "kic-nodes":
		k.serveNodes(w, r, cp, segs[1:])
	case "licenses":
		if len(segs) != 1 {
			konnectMsg(w, http.StatusNotFound, "Not found")
			return
		}
		k.serveLicenses(w, r, cp)
	case "schemas":
		k.serveJSONSchema(w, r, cp, segs[1:])
	case "consumer-groups":
		k.serveConsumerGroups(w, r, cp, segs[1:])
	case "consumers":
		// /v1/consumers/{consumer}/groups/{group}/members
		if len(segs) != 5 || segs[2] != "groups" || segs[4] != "members" {
			konnectMsg(w, http.StatusNotFound, "Not found")
			return
		}
		k.serveMembership(w, r, cp, segs[1], segs[3])
	default:
		konnectMsg(w, http.StatusNotFound, "Not found")
	}
}

// nodeRequest is the body of POST and PUT /v1/kic-nodes (KIC's CreateNodeRequest and
// UpdateNodeRequest).
type nodeRequest struct {
	ID                  string          `json:"id"`
	Hostname            string          `json:"hostname"`
	Type                string          `json:"type"`
	LastPing            int64           `json:"last_ping"`
	Version             string          `json:"version"`
	CompatibilityStatus json.RawMessage `json:"compatibility_status"`
	Status              string          `json:"status"`
	ConfigHash          string          `json:"config_hash"`
}

func readNodeRequest(w http.ResponseWriter, r *http.Request) (*nodeRequest, bool) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		konnectMsg(w, http.StatusBadRequest, "cannot read body")
		return nil, false
	}
	var req nodeRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		konnectMsg(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return nil, false
	}
	switch {
	case req.Hostname == "":
		konnectMsg(w, http.StatusBadRequest, "hostname: required")
	case req.Type != KonnectNodeIngressController && req.Type != KonnectNodeKongProxy:
		konnectMsg(w, http.StatusBadRequest, fmt.Sprintf("type: must be %q or %q, not %q",
			KonnectNodeIngressController, KonnectNodeKongProxy, req.Type))
	case req.Status != "" && !konnectNodeStatuses[req.Status]:
		konnectMsg(w, http.StatusBadRequest, fmt.Sprintf("status: unknown value %q", req.Status))
	case req.ID != "" && !isUUID(req.ID):
		konnectMsg(w, http.StatusBadRequest, fmt.Sprintf("id: %q is not a UUID", req.ID))
	default:
		if string(req.CompatibilityStatus) == "null" {
			req.CompatibilityStatus = nil
		}
		return &req, true
	}
	return nil, false
}

// serveNodes serves /v1/kic-nodes[/{id}].
func (k *Konnect) serveNodes(w http.ResponseWriter, r *http.Request, cp *konnectCP, segs []string) {
	if len(segs) > 1 {
		konnectMsg(w, http.StatusNotFound, "Not found")
		return
	}
	if len(segs) == 0 {
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			k.listNodes(w, r, cp)
		case http.MethodPost:
			req, ok := readNodeRequest(w, r)
			if !ok {
				return
			}
			k.mu.Lock()
			defer k.mu.Unlock()
			id := req.ID
			if id == "" {
				id = uuid.NewString()
			}
			if cp.nodes[id] != nil {
				konnectMsg(w, http.StatusConflict, fmt.Sprintf("node %s already exists", id))
				return
			}
			now := k.opts.Now().Unix()
			cp.nodeSeq++
			n := &konnectNode{seq: cp.nodeSeq, KonnectNode: KonnectNode{ID: id, CreatedAt: now}}
			n.apply(req, now)
			cp.nodes[id] = n
			writeJSON(w, http.StatusCreated, map[string]any{"item": n.KonnectNode})
		default:
			writeErr(w, methodNotAllowed)
		}
		return
	}
	id := segs[0]
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		k.mu.Lock()
		n := cp.nodes[id]
		var node KonnectNode
		if n != nil {
			node = n.KonnectNode
		}
		k.mu.Unlock()
		if n == nil {
			konnectMsg(w, http.StatusNotFound, "node not found")
			return
		}
		writeJSON(w, http.StatusOK, node)
	case http.MethodPut:
		req, ok := readNodeRequest(w, r)
		if !ok {
			return
		}
		k.mu.Lock()
		defer k.mu.Unlock()
		n := cp.nodes[id]
		if n == nil {
			konnectMsg(w, http.StatusNotFound, "node not found")
			return
		}
		n.apply(req, k.opts.Now().Unix())
		writeJSON(w, http.StatusOK, map[string]any{"item": n.KonnectNode})
	case http.MethodDelete:
		k.mu.Lock()
		defer k.mu.Unlock()
		if cp.nodes[id] == nil {
			konnectMsg(w, http.StatusNotFound, "node not found")
			return
		}
		delete(cp.nodes, id)
		w.WriteHeader(http.StatusNoContent)
	default:
		writeErr(w, methodNotAllowed)
	}
}

// apply sets a node's fields from a create or update request.
func (n *konnectNode) apply(req *nodeRequest, now int64) {
	n.Hostname, n.Type, n.LastPing, n.Version = req.Hostname, req.Type, req.LastPing, req.Version
	n.ConfigHash, n.CompatibilityStatus, n.Status = req.ConfigHash, req.CompatibilityStatus, req.Status
	n.UpdatedAt = now
}

// listNodes serves GET /v1/kic-nodes: the nodes by creation, page.size at a time
// (KonnectOptions.NodesPageSize by default), the next page from page.next_cursor (the
// cursor form KIC 3.5 reads: {"items", "page": {total_count, next_cursor, has_next_page}})
// or page.number (the older form: next_page_num).
func (k *Konnect) listNodes(w http.ResponseWriter, r *http.Request, cp *konnectCP) {
	q := r.URL.Query()
	size := k.opts.NodesPageSize
	if s := q.Get("page.size"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			konnectMsg(w, http.StatusBadRequest, "page.size: must be an integer between 1 and 1000")
			return
		}
		size = n
	}
	after, number := 0, 0
	if c := q.Get("page.next_cursor"); c != "" {
		b, err := base64.RawURLEncoding.DecodeString(c)
		n, err2 := strconv.Atoi(string(b))
		if err != nil || err2 != nil || n < 0 {
			konnectMsg(w, http.StatusBadRequest, "page.next_cursor: invalid cursor")
			return
		}
		after = n
	} else if s := q.Get("page.number"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			konnectMsg(w, http.StatusBadRequest, "page.number: must be a positive integer")
			return
		}
		number = n
	}
	k.mu.Lock()
	all := cp.sortedNodes()
	var rest []*konnectNode
	if number > 0 {
		if start := (number - 1) * size; start < len(all) {
			rest = all[start:]
		}
	} else {
		for i, n := range all {
			if n.seq > after {
				rest = all[i:]
				break
			}
		}
	}
	items := []KonnectNode{}
	for i := 0; i < len(rest) && i < size; i++ {
		items = append(items, rest[i].KonnectNode)
	}
	page := map[string]any{"total_count": len(all), "has_next_page": len(rest) > size, "next_cursor": ""}
	if len(rest) > size {
		page["next_cursor"] = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(rest[size-1].seq)))
		if number > 0 {
			page["next_page_num"] = number + 1
		}
	}
	k.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"items": items, "page": page})
}

// serveLicenses serves GET /v1/licenses: {"items": [license]}, or 404 without one.
func (k *Konnect) serveLicenses(w http.ResponseWriter, r *http.Request, cp *konnectCP) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeErr(w, methodNotAllowed)
		return
	}
	k.mu.Lock()
	var l KonnectLicense
	has := cp.license != nil
	if has {
		l = *cp.license
	}
	k.mu.Unlock()
	if !has {
		konnectMsg(w, http.StatusNotFound, "no license")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": []KonnectLicense{l}})
}

// writeInner writes an answer of the Admin API emulator as it is, or, for a 2xx with a
// body, the body wrapped as {"item": body}.
func writeInner(w http.ResponseWriter, status int, body []byte, wrap bool) {
	if status < 200 || status > 299 || !wrap || len(body) == 0 {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		_, _ = w.Write(body)
		return
	}
	out := append(append([]byte(`{"item":`), body...), '}')
	writeJSONBytes(w, status, out)
}

// serveConsumerGroups serves /v1/consumer-groups[/{id}[/members|/rate-limiting-advanced-config]]
// on the Admin API emulator's consumer_groups.
func (k *Konnect) serveConsumerGroups(w http.ResponseWriter, r *http.Request, cp *konnectCP, segs []string) {
	ctx := r.Context()
	readRaw := func() ([]byte, bool) {
		raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			konnectMsg(w, http.StatusBadRequest, "cannot read body")
			return nil, false
		}
		if len(raw) == 0 {
			raw = []byte("{}")
		}
		return raw, true
	}
	switch {
	case len(segs) == 0 && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		status, body := innerCall(ctx, cp.emu, http.MethodGet, "/consumer_groups?size=1000", nil)
		writeItems(w, status, body)
	case len(segs) == 0 && r.Method == http.MethodPost:
		raw, ok := readRaw()
		if !ok {
			return
		}
		status, body := innerCall(ctx, cp.emu, http.MethodPost, "/consumer_groups", raw)
		writeInner(w, status, body, true)
	case len(segs) == 1:
		path := "/consumer_groups/" + segs[0]
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			g := cp.emu.Entity("consumer_groups", segs[0])
			if g == nil {
				konnectMsg(w, http.StatusNotFound, "Not found")
				return
			}
			writeJSON(w, http.StatusOK, map[string]any{"item": g})
		case http.MethodPut:
			raw, ok := readRaw()
			if !ok {
				return
			}
			status, body := innerCall(ctx, cp.emu, http.MethodPut, path, raw)
			writeInner(w, status, body, true)
		case http.MethodDelete:
			g := cp.emu.Entity("consumer_groups", segs[0])
			status, body := innerCall(ctx, cp.emu, http.MethodDelete, path, nil)
			if g != nil && status/100 == 2 {
				k.mu.Lock()
				delete(cp.rla, g["id"].(string))
				k.mu.Unlock()
			}
			writeInner(w, status, body, false)
		default:
			writeErr(w, methodNotAllowed)
		}
	case len(segs) == 2 && segs[1] == "members":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			writeErr(w, methodNotAllowed)
			return
		}
		status, body := innerCall(ctx, cp.emu, http.MethodGet, "/consumer_groups/"+segs[0]+"/consumers", nil)
		writeItems(w, status, body)
	case len(segs) == 2 && segs[1] == "rate-limiting-advanced-config":
		k.serveGroupRLA(w, r, cp, segs[0])
	default:
		konnectMsg(w, http.StatusNotFound, "Not found")
	}
}

// writeItems writes a list answer {data: [...]} of the Admin API emulator as Konnect's
// {"items": [...], "page": {"total_count"}}, one page.
func writeItems(w http.ResponseWriter, status int, body []byte) {
	if status != http.StatusOK {
		writeInner(w, status, body, false)
		return
	}
	var l struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &l); err != nil {
		konnectMsg(w, http.StatusInternalServerError, "An unexpected error occurred")
		return
	}
	if l.Data == nil {
		l.Data = []json.RawMessage{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": l.Data, "page": map[string]any{"total_count": len(l.Data)}})
}

// serveGroupRLA serves /v1/consumer-groups/{id}/rate-limiting-advanced-config, the
// consumer group's rate-limiting-advanced override (go-database-reconciler with policy
// overrides): kept beside the group, not as a plugin.
func (k *Konnect) serveGroupRLA(w http.ResponseWriter, r *http.Request, cp *konnectCP, key string) {
	g := cp.emu.Entity("consumer_groups", key)
	if g == nil {
		konnectMsg(w, http.StatusNotFound, "consumer group not found")
		return
	}
	gid := g["id"].(string)
	k.mu.Lock()
	defer k.mu.Unlock()
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		item := cp.rla[gid]
		if item == nil {
			konnectMsg(w, http.StatusNotFound, "Not found")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"item": item})
	case http.MethodPost, http.MethodPut:
		var cfg map[string]any
		raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err == nil {
			err = json.Unmarshal(raw, &cfg)
		}
		if err != nil {
			konnectMsg(w, http.StatusBadRequest, "invalid JSON body")
			return
		}
		old := cp.rla[gid]
		if r.Method == http.MethodPost && old != nil {
			konnectMsg(w, http.StatusConflict, "rate-limiting-advanced-config already exists")
			return
		}
		id := uuid.NewString()
		if old != nil {
			id = old["id"].(string)
		}
		item := map[string]any{"id": id, "consumer_group_id": gid}
		for _, f := range []string{"limit", "window_size", "window_type", "retry_after_jitter_max"} {
			if v, ok := cfg[f]; ok {
				item[f] = v
			}
		}
		cp.rla[gid] = item
		status := http.StatusOK
		if old == nil {
			status = http.StatusCreated
		}
		writeJSON(w, status, map[string]any{"item": item})
	case http.MethodDelete:
		delete(cp.rla, gid)
		w.WriteHeader(http.StatusNoContent)
	default:
		writeErr(w, methodNotAllowed)
	}
}

// serveMembership serves /v1/consumers/{consumer}/groups/{group}/members: POST adds the
// consumer to the group, PUT makes sure it is in it, DELETE takes it out.
func (k *Konnect) serveMembership(w http.ResponseWriter, r *http.Request, cp *konnectCP, consumer, group string) {
	ctx := r.Context()
	switch r.Method {
	case http.MethodPost, http.MethodPut:
		body := marshalJSON(map[string]any{"consumer": consumer})
		status, answer := innerCall(ctx, cp.emu, http.MethodPost, "/consumer_groups/"+group+"/consumers", body)
		if status == http.StatusConflict && r.Method == http.MethodPut {
			status = http.StatusOK
		}
		if status/100 != 2 {
			writeInner(w, status, answer, false)
			return
		}
		w.WriteHeader(status)
	case http.MethodDelete:
		status, answer := innerCall(ctx, cp.emu, http.MethodDelete, "/consumer_groups/"+group+"/consumers/"+consumer, nil)
		writeInner(w, status, answer, false)
	default:
		writeErr(w, methodNotAllowed)
	}
}
