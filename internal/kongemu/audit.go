package kongemu

import (
	"encoding/pem"
	"strings"
	"time"
)

// AuditEntry records one request that changed state.
type AuditEntry struct {
	Time   time.Time
	Method string
	Path   string
	// Entity is the entity type ("services", "routes", ...; "config" for POST /config).
	Entity string
	ID     string
	Name   string
	Tags   []string
	// RouteTags are the tags of each route of a loaded DB-less configuration, with
	// Options.AuditConfigRoutes.
	RouteTags [][]string
}

func (e *Emulator) record(method, path, entity, id, name string, tags []string) {
	e.audit = append(e.audit, AuditEntry{Time: e.opts.Now(), Method: method, Path: path,
		Entity: entity, ID: id, Name: name, Tags: append([]string(nil), tags...)})
}

// Audit returns every state-changing request so far, in order.
func (e *Emulator) Audit() []AuditEntry {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]AuditEntry(nil), e.audit...)
}

// AuditMark returns a position in the audit log for AuditSince.
func (e *Emulator) AuditMark() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.audit)
}

// AuditSince returns the entries recorded after mark (from AuditMark).
func (e *Emulator) AuditSince(mark int) []AuditEntry {
	e.mu.Lock()
	defer e.mu.Unlock()
	if mark < 0 || mark > len(e.audit) {
		mark = len(e.audit)
	}
	return append([]AuditEntry(nil), e.audit[mark:]...)
}

// ResetAudit empties the audit log and the request counters.
func (e *Emulator) ResetAudit() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.audit = nil
	e.requests = map[string]int{}
}

// Requests returns the number of requests received (reads included, and
// requests answered by a fault), keyed by "METHOD /path" (no query).
func (e *Emulator) Requests() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]int, len(e.requests))
	for k, v := range e.requests {
		out[k] = v
	}
	return out
}

// RequestCount sums the requests whose method matches (empty: any) and
// whose path starts with pathPrefix.
func (e *Emulator) RequestCount(method, pathPrefix string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for k, v := range e.requests {
		m, p, _ := strings.Cut(k, " ")
		if (method == "" || m == method) && strings.HasPrefix(p, pathPrefix) {
			n += v
		}
	}
	return n
}

func pemEncode(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
