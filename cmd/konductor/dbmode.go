package main

import (
	"context"
	"errors"
	"io"

	"github.com/go-logr/logr"

	"github.com/konductor/konductor/internal/config"
	"github.com/konductor/konductor/internal/dataplane"
)

// dbModeFactory returns how database-backed gateways are synced. Database mode is issue 5's
// work; until it lands, a database-backed Kong is refused with a clear error.
func dbModeFactory(_ *config.Config, _ logr.Logger) dataplane.DBModeFactory { return nil }

func runDiff(_ context.Context, _ []string, _ io.Writer) error {
	return errors.New("diff: database mode is not built yet")
}
