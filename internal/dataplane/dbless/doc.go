// Package dbless pushes a rendered declarative configuration to one DB-less Kong gateway
// through POST /config.
//
// It keeps three facts per gateway: the digest of the last configuration the gateway accepted
// (so an unchanged configuration is not sent again), that configuration itself (the last good
// one, which a restarted gateway gets back even while the current one is rejected), and the
// digest of the last configuration the gateway rejected (so a bad configuration is not sent
// again and again until it changes). A gateway that reports the all-zero configuration_hash in
// GET /status has lost its configuration (it restarted) and is sent it again; so is one whose
// hash is no longer the one it reported right after our last push (another writer replaced it).
package dbless
