package kongemu

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Fault describes an injected failure. A request matches when its method
// equals Method (empty: any) and its path starts with PathPrefix (empty: any).
type Fault struct {
	// Method restricts the fault to one HTTP method ("" = any).
	Method string
	// PathPrefix restricts the fault to paths with this prefix ("" = any).
	PathPrefix string
	// Count is how many matching requests the fault hits; 0 = unlimited
	// (until ClearFaults).
	Count int
	// Fraction, when in (0,1), hits that fraction of matching requests,
	// drawn from the emulator's seeded generator; 0 means every one.
	Fraction float64
	// Status answers the request with this code (500, 503, 429, ...) and a
	// Kong-like body. 0: no status fault.
	Status int
	// RetryAfter is the Retry-After header in seconds (429, 503; default 1 for 429).
	RetryAfter int
	// Latency delays the request (then serves it, or applies Status/Drop).
	Latency time.Duration
	// Drop hijacks the connection and closes it without an answer.
	Drop bool
}

// FaultHit is one request a fault hit: when it arrived and what it was answered.
type FaultHit struct {
	Time       time.Time
	Method     string
	Path       string
	Status     int // 0 for a dropped connection or latency only
	RetryAfter int
}

// FaultHits returns the requests faults hit so far, in order: a client's retry schedule
// (Retry-After honoured) is read from them and the audit log.
func (e *Emulator) FaultHits() []FaultHit {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]FaultHit(nil), e.faultHits...)
}

type faultRule struct {
	Fault
	left int // remaining hits; -1 unlimited
}

// ConfigRejection is a rejection of the next POST /config: 400 with one
// flattened error on an entity of EntityType (singular, e.g. "route").
type ConfigRejection struct {
	EntityType string
	EntityName string
	EntityID   string
	EntityTags []string
	Field      string // "" for an entity-level error
	Message    string
}

// InjectFault adds a fault. Faults are checked in the order they were added;
// the first that matches applies.
func (e *Emulator) InjectFault(f Fault) {
	e.mu.Lock()
	defer e.mu.Unlock()
	left := f.Count
	if left <= 0 {
		left = -1
	}
	e.faults = append(e.faults, &faultRule{Fault: f, left: left})
}

// FailNext makes the next n requests (any method, any path) answer status.
func (e *Emulator) FailNext(n, status int) {
	e.InjectFault(Fault{Count: n, Status: status})
}

// ClearFaults removes every fault and pending config rejection.
func (e *Emulator) ClearFaults() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.faults = nil
	e.rejectNext = nil
}

// RejectNextConfig makes the next POST /config answer 400 with a flattened
// error built from r, whatever the body.
func (e *Emulator) RejectNextConfig(r ConfigRejection) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rejectNext = append(e.rejectNext, r)
}

// pickFault finds the fault for r and consumes one hit. Caller holds mu.
func (e *Emulator) pickFault(r *http.Request) *Fault {
	for i, f := range e.faults {
		if f.Method != "" && f.Method != r.Method {
			continue
		}
		if f.PathPrefix != "" && !strings.HasPrefix(r.URL.Path, f.PathPrefix) {
			continue
		}
		if f.Fraction > 0 && f.Fraction < 1 && e.rng.Float64() >= f.Fraction {
			continue
		}
		if f.left > 0 {
			f.left--
			if f.left == 0 {
				e.faults = append(e.faults[:i:i], e.faults[i+1:]...)
			}
		}
		c := f.Fault
		e.faultHits = append(e.faultHits, FaultHit{Time: e.opts.Now(), Method: r.Method, Path: r.URL.Path, Status: c.Status, RetryAfter: c.RetryAfter})
		return &c
	}
	return nil
}

// applyFault performs f; done reports that the request was answered.
func (e *Emulator) applyFault(w http.ResponseWriter, r *http.Request, f *Fault) (done bool) {
	if f.Latency > 0 {
		t := time.NewTimer(f.Latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return true
		}
	}
	if f.Drop {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return true
			}
		}
		// Not hijackable (httptest recorder, HTTP/2): abort the handler.
		panic(http.ErrAbortHandler)
	}
	if f.Status == 0 {
		return false
	}
	ra := f.RetryAfter
	if ra == 0 && f.Status == http.StatusTooManyRequests {
		ra = 1
	}
	if ra > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(ra))
	}
	msg := "An unexpected error occurred"
	switch f.Status {
	case http.StatusTooManyRequests:
		msg = "Currently loading previous configuration"
	case http.StatusServiceUnavailable:
		msg = "Service Unavailable"
	case http.StatusGatewayTimeout:
		msg = "Gateway Timeout"
	}
	writeJSON(w, f.Status, map[string]any{"message": msg})
	return true
}

// Restart simulates a Kong restart: a DB-less node loses its configuration
// (hash back to 32 zeros); a database node keeps its entities. Faults, audit
// log and request counters are kept; the node id changes.
func (e *Emulator) Restart() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.dbless() {
		e.db = newDB()
		e.configHash = emptyHash
		e.rawConfig = nil
	}
	e.nodeID = newNodeID()
}
