package konnect

import (
	"context"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/konductor/konductor/internal/dataplane"
)

// Node types and the controller's statuses, KIC's (internal/konnect/nodes).
const (
	NodeTypeController = "ingress-controller"
	NodeTypeGateway    = "kong-proxy"

	StatusOperational        = "INGRESS_CONTROLLER_STATE_OPERATIONAL"
	StatusPartialConfigFail  = "INGRESS_CONTROLLER_STATE_PARTIAL_CONFIG_FAIL"
	StatusInoperable         = "INGRESS_CONTROLLER_STATE_INOPERABLE"
	statusKonnectOutOfSync   = "_KONNECT_OUT_OF_SYNC"
	MinRefreshNodePeriod     = 30 * time.Second
	nodesPath                = "/v1/kic-nodes"
	nodeListCursorQueryParam = "page.next_cursor"
)

// Node is a node of the control plane, as its API says it.
type Node struct {
	ID       string `json:"id,omitempty"`
	Version  string `json:"version,omitempty"`
	Hostname string `json:"hostname"`
	LastPing int64  `json:"last_ping"`
	Type     string `json:"type"`
	Status   string `json:"status,omitempty"`
}

type nodeItem struct {
	Item Node `json:"item"`
}

type nodeList struct {
	Items []Node `json:"items"`
	Page  struct {
		NextCursor  string `json:"next_cursor"`
		HasNextPage bool   `json:"has_next_page"`
	} `json:"page"`
}

// GatewayNode is one gateway as a node: its Kong node ID (GET /), host name and version.
type GatewayNode struct {
	ID, Hostname, Version string
}

// NodeOptions configure a NodeAgent.
type NodeOptions struct {
	// Hostname names the controller (KIC: <POD_NAMESPACE>/<POD_NAME>), ID its node on creation
	// (the instance's), Version its version string (KIC: kong-ingress-controller/<version>).
	Hostname, ID, Version string
	// Period is --konnect-refresh-node-period (at least MinRefreshNodePeriod, as KIC clamps it).
	Period time.Duration
	// Gateways are the gateways to report, now.
	Gateways func() []GatewayNode
	// KonnectFailed says whether the last configuration upload failed (ConfigSync.Failed).
	KonnectFailed func() bool
	Log           logr.Logger
}

// NodeAgent reports the controller and its gateways as the control plane's nodes (KIC's
// NodeAgent): on start, on every Period and when the controller's status changes, it lists
// the nodes and keeps one controller node (its own host name, the newest; every other
// controller node is deleted: a control plane has one controller) and one node per gateway
// (duplicates by host name and gateways gone are deleted).
type NodeAgent struct {
	api  *apiClient
	opts NodeOptions

	mu     sync.Mutex
	status string
	wake   chan struct{}
}

// NewNodeAgent returns the agent of the control plane opts names.
func NewNodeAgent(o Options, opts NodeOptions) *NodeAgent {
	opts.Period = max(opts.Period, MinRefreshNodePeriod)
	return &NodeAgent{api: newAPIClient(o), opts: opts, status: StatusOperational, wake: make(chan struct{}, 1)}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (a *NodeAgent) NeedLeaderElection() bool { return true }

// Report implements dataplane.Reporter: the controller's status from the round (KIC's
// CalculateConfigStatus): a gateway that refused or could not take the configuration makes
// it inoperable, translation problems partial; a change reports the nodes at once.
func (a *NodeAgent) Report(_ context.Context, r dataplane.Round) {
	if r.SnapshotErr != nil || !r.Translated {
		return
	}
	st := StatusOperational
	if len(r.Problems) > 0 {
		st = StatusPartialConfigFail
	}
	for _, g := range r.Gateways {
		if g.Err != nil {
			st = StatusInoperable
		}
	}
	a.mu.Lock()
	changed := st != a.status
	a.status = st
	a.mu.Unlock()
	if changed {
		a.poke()
	}
}

func (a *NodeAgent) poke() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Status is the controller node's status now.
func (a *NodeAgent) Status() string {
	a.mu.Lock()
	st := a.status
	a.mu.Unlock()
	if a.opts.KonnectFailed != nil && a.opts.KonnectFailed() {
		st += statusKonnectOutOfSync
	}
	return st
}

// Start reports the nodes until ctx ends. A failed report is logged and tried again at the
// next period (KIC stops for good when its first one fails).
func (a *NodeAgent) Start(ctx context.Context) error {
	t := time.NewTicker(a.opts.Period)
	defer t.Stop()
	for {
		if err := a.Update(ctx); err != nil && ctx.Err() == nil {
			a.opts.Log.Error(err, "Failed to report the Konnect nodes")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-a.wake: // Report pokes only when the status changed
		}
	}
}

// Update reports the nodes once.
func (a *NodeAgent) Update(ctx context.Context) error {
	nodes, err := a.list(ctx)
	if err != nil {
		return err
	}
	now := time.Now().Unix()
	var controllers []Node
	gateways := map[string][]Node{}
	for _, n := range nodes {
		switch n.Type {
		case NodeTypeController:
			if n.Hostname != a.opts.Hostname {
				if err := a.delete(ctx, n.ID); err != nil {
					return err
				}
				continue
			}
			controllers = append(controllers, n)
		case NodeTypeGateway:
			gateways[n.Hostname] = append(gateways[n.Hostname], n)
		}
	}
	me := Node{Hostname: a.opts.Hostname, Type: NodeTypeController, Version: a.opts.Version, LastPing: now, Status: a.Status()}
	if err := a.keepOne(ctx, controllers, me, a.opts.ID); err != nil {
		return err
	}
	var current []GatewayNode
	if a.opts.Gateways != nil {
		current = a.opts.Gateways()
	}
	seen := map[string]bool{}
	for _, g := range current {
		seen[g.Hostname] = true
		n := Node{Hostname: g.Hostname, Type: NodeTypeGateway, Version: g.Version, LastPing: now}
		if err := a.keepOne(ctx, gateways[g.Hostname], n, g.ID); err != nil {
			a.opts.Log.Error(err, "Failed to report a gateway as a Konnect node", "gateway", g.Hostname)
		}
	}
	for _, host := range slices.Sorted(maps.Keys(gateways)) {
		if seen[host] {
			continue
		}
		for _, n := range gateways[host] {
			if err := a.delete(ctx, n.ID); err != nil {
				return err
			}
		}
	}
	return nil
}

// keepOne updates the newest of have to want and deletes the others, or creates want (with
// id) when have is empty.
func (a *NodeAgent) keepOne(ctx context.Context, have []Node, want Node, id string) error {
	if len(have) == 0 {
		want.ID = id
		return a.api.do(ctx, http.MethodPost, nodesPath, want, &nodeItem{})
	}
	sort.SliceStable(have, func(i, j int) bool { return have[i].LastPing > have[j].LastPing })
	if err := a.api.do(ctx, http.MethodPut, nodesPath+"/"+url.PathEscape(have[0].ID), want, &nodeItem{}); err != nil {
		return err
	}
	for _, n := range have[1:] {
		if err := a.delete(ctx, n.ID); err != nil {
			return err
		}
	}
	return nil
}

func (a *NodeAgent) delete(ctx context.Context, id string) error {
	return a.api.do(ctx, http.MethodDelete, nodesPath+"/"+url.PathEscape(id), nil, nil)
}

// list is every node, page by page.
func (a *NodeAgent) list(ctx context.Context) ([]Node, error) {
	var out []Node
	cursor := ""
	for {
		path := nodesPath
		if cursor != "" {
			path += "?" + url.Values{nodeListCursorQueryParam: {cursor}}.Encode()
		}
		var page nodeList
		if err := a.api.do(ctx, http.MethodGet, path, nil, &page); err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if !page.Page.HasNextPage || page.Page.NextCursor == "" {
			return out, nil
		}
		cursor = page.Page.NextCursor
	}
}
