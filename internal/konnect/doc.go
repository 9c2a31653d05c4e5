// Package konnect mirrors what konductor sends its gateways into a Kong Konnect control
// plane, as KIC's --konnect-* flags do (docs/konnect.md; KIC's internal/konnect, read in its
// source): the configuration the gateways took, uploaded with go-database-reconciler in
// Konnect mode (ConfigSync); the controller and its gateways reported as the control plane's
// nodes (NodeAgent); the Kong Enterprise license polled from it and kept in a Secret
// (LicenseAgent).
//
// Konnect is never on the gateways' path: the sync loop hands over the configuration a round's
// gateways took (a dataplane.Reporter, which never blocks) and the uploads run on their own
// timer, with their own backoff, so a slow or unreachable Konnect delays nothing but itself.
// Everything here runs on the leader only, as in KIC.
package konnect
