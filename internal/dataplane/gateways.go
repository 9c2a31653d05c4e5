package dataplane

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/go-logr/logr"
	"github.com/kong/go-kong/kong"

	"github.com/konductor/konductor/internal/dataplane/dbless"
	"github.com/konductor/konductor/internal/kongstate"
)

// DBLessGateway syncs a DB-less Kong through POST /config.
type DBLessGateway struct {
	url string
	gw  *dbless.Gateway
	log logr.Logger
}

// NewDBLessGateway returns a Gateway for the DB-less Kong at url.
func NewDBLessGateway(url string, client *kong.Client, log logr.Logger) *DBLessGateway {
	return &DBLessGateway{url: url, gw: dbless.New(client), log: log}
}

// URL implements Gateway.
func (g *DBLessGateway) URL() string { return g.url }

// Sync implements Gateway.
func (g *DBLessGateway) Sync(ctx context.Context, t *Target) error {
	cfg, err := t.DeclarativeConfig()
	if err != nil {
		return fmt.Errorf("rendering declarative configuration: %w", err)
	}
	out, err := g.gw.Push(ctx, cfg)
	if out != dbless.Unchanged {
		g.log.V(1).Info("configuration sent", "gateway", g.url, "outcome", out.String(), "bytes", len(cfg))
	}
	var rej *dbless.RejectedError
	if errors.As(err, &rej) {
		return fromDBLessRejection(g.url, rej)
	}
	return err
}

func fromDBLessRejection(url string, rej *dbless.RejectedError) *RejectedError {
	out := &RejectedError{Gateway: url, Message: rej.Error()}
	for _, ent := range rej.Entities {
		ref, _ := kongstate.ObjectRefFromTags(ent.Tags)
		for _, fe := range ent.Errors {
			out.Entities = append(out.Entities, EntityError{
				Object: ref, EntityType: ent.EntityType, EntityName: ent.EntityName,
				Field: fe.Field, Message: fe.Message,
			})
		}
	}
	return out
}

// DBModeFactory builds the Gateway of a database-backed Kong. httpClient reaches it (TLS
// server name of a discovered gateway included); nil means the --kong-admin-* settings.
type DBModeFactory func(url string, httpClient *http.Client) (Gateway, error)

// DetectingGateway learns whether a Kong has a database (GET /, configuration.database) the
// first time it syncs, after the cache barrier, and then syncs the way that Kong needs.
type DetectingGateway struct {
	url    string
	client *kong.Client
	dbMode DBModeFactory
	log    logr.Logger

	mu    sync.Mutex
	inner Gateway
}

// NewDetectingGateway returns a Gateway for the Kong at url. dbMode may be nil when database
// mode is not supported by the caller; a database-backed Kong then fails every sync.
func NewDetectingGateway(url string, client *kong.Client, dbMode DBModeFactory, log logr.Logger) *DetectingGateway {
	return &DetectingGateway{url: url, client: client, dbMode: dbMode, log: log}
}

// URL implements Gateway.
func (g *DetectingGateway) URL() string { return g.url }

// Sync implements Gateway.
func (g *DetectingGateway) Sync(ctx context.Context, t *Target) error {
	g.mu.Lock()
	inner := g.inner
	g.mu.Unlock()
	if inner == nil {
		db, err := HasDatabase(ctx, g.client)
		if err != nil {
			return err
		}
		if !db {
			inner = NewDBLessGateway(g.url, g.client, g.log)
		} else if g.dbMode == nil {
			return fmt.Errorf("gateway %s has a database, which this build cannot sync", g.url)
		} else if inner, err = g.dbMode(g.url, nil); err != nil {
			return err
		}
		g.log.Info("gateway mode detected", "gateway", g.url, "database", db)
		g.mu.Lock()
		g.inner = inner
		g.mu.Unlock()
	}
	return inner.Sync(ctx, t)
}

// HasDatabase asks a Kong (GET /) whether it is database-backed.
func HasDatabase(ctx context.Context, client *kong.Client) (bool, error) {
	root, err := client.Root(ctx)
	if err != nil {
		return false, fmt.Errorf("reading the gateway's configuration (GET /): %w", err)
	}
	conf, _ := root["configuration"].(map[string]any)
	db, _ := conf["database"].(string)
	return db != "" && db != "off", nil
}
