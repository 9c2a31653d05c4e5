// Package discovery finds the gateways to configure from the endpoints of Kong Admin API
// Services (--kong-admin-svc), as KIC's gateway discovery does, reading EndpointSlices from the
// manager's cache. It checks each discovered gateway (GET / while pending, GET /status once
// ready) and offers the sync loop the ready ones: all of them for DB-less Kong, one writer for
// Kong with a database.
package discovery
