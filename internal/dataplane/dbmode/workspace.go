package dbmode

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/kong/go-kong/kong"

	"github.com/konductor/konductor/internal/dataplane"
)

// ensureWorkspace makes sure Options.Workspace exists on this Kong before the first request
// that goes to it, as KIC does when it builds a client for a workspace
// (adminapi.NewKongClientForWorkspace; docs/kong-facts.md, "Workspaces"): it asks whether the
// workspace exists (GET /{ws}/workspaces/{ws}, go-kong's ExistsByName: a token scoped to that
// workspace may read it there) and, with create, creates it (POST /workspaces) when it does
// not. Without create (a dry run, a standby's Prepare: they write nothing) a missing
// workspace is an error. Once found or created it is not asked again; a failure is asked
// again on the next call. Kong OSS has no workspaces: that is an error naming the flag.
func (g *Gateway) ensureWorkspace(ctx context.Context, create bool) error {
	ws := g.opts.Workspace
	if ws == "" {
		return nil
	}
	g.wsMu.Lock()
	defer g.wsMu.Unlock()
	if g.wsReady {
		return nil
	}
	exists, err := g.root.Workspaces.ExistsByName(ctx, kong.String(ws))
	if err != nil {
		return fmt.Errorf("looking up workspace %q (--kong-workspace) on %s: %w", ws, g.url, err)
	}
	if !exists {
		// Kong OSS answers 404 to that path too (it serves no workspace-prefixed path):
		// GET / tells it from an Enterprise Kong without the workspace. A token that may not
		// read GET / (one scoped to the workspace) goes on to the create, which says more.
		if root, err := g.root.Root(ctx); err == nil && !dataplane.IsEnterprise(root) {
			return fmt.Errorf("--kong-workspace %q: %s is not Kong Gateway Enterprise (version %v): workspaces are an Enterprise feature; remove --kong-workspace (CONTROLLER_KONG_WORKSPACE) to configure this Kong's only workspace",
				ws, g.url, root["version"])
		}
		if !create {
			return fmt.Errorf("workspace %q (--kong-workspace) does not exist on %s yet: the controller's first sync creates it", ws, g.url)
		}
		_, err := g.root.Workspaces.Create(ctx, &kong.Workspace{Name: kong.String(ws)})
		var apiErr *kong.APIError
		switch {
		case errors.As(err, &apiErr) && apiErr.Code() == http.StatusConflict:
			// Made meanwhile by another gateway of the same database (discovered gateways
			// share it) or another controller: it exists, which is all that was wanted.
		case err != nil:
			return fmt.Errorf("creating workspace %q (--kong-workspace) on %s: %w", ws, g.url, err)
		default:
			g.opts.Logger.Info("created the Kong workspace", "gateway", g.url, "workspace", ws)
		}
	}
	g.wsReady = true
	return nil
}
