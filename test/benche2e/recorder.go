package benche2e

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"
)

// recordingKong records every configuration a DB-less Kong takes: when POST /config arrived
// and which change markers (hosts) it carried. Without next it is a Kong that validates
// nothing, so that the benchmark measures the controller and not Kong: it answers GET / (a
// DB-less 3.10 with the traditional_compatible router) and GET /status (the digest of the
// last body as configuration_hash), which is all the controller asks. With next (the
// emulator) every request goes there and a POST /config is recorded once it was accepted.
type recordingKong struct {
	next     http.Handler
	complete int // distinct hosts of a complete configuration
	// database: next is a database-backed Kong, configured entity by entity; a push is then
	// one write of a route, and dbHosts the distinct hosts of the routes written so far.
	database bool
	dbHosts  map[string]bool

	mu      sync.Mutex
	pushes  []push
	digest  string
	markers map[string]carried // host -> first push that carried it
	other   map[string]int     // requests to paths it does not serve, for the report
	notify  chan struct{}      // a tick per push
}

type push struct {
	at     time.Time // the body had been read
	began  time.Time // the request's headers had been read (the handler was called)
	digest string
	hosts  int // distinct route hosts in the body, counted only until a complete push is seen
	size   int // the POST body's bytes, as sent
}

func newRecordingKong(next http.Handler, complete int) *recordingKong {
	return &recordingKong{next: next, complete: complete, markers: map[string]carried{}, other: map[string]int{}, notify: make(chan struct{}, 1)}
}

// carried is when the first push that carried a marker arrived: its headers, and its whole
// body (zero while none did).
type carried struct {
	began, at time.Time
}

// statusRecorder remembers the status code a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

func (k *recordingKong) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	began := time.Now()
	isConfig := r.Method == http.MethodPost && r.URL.Path == "/config"
	if k.next != nil {
		if k.database && isRouteWrite(r) {
			k.serveRecorded(w, r, began, k.recordRoute)
			return
		}
		if !isConfig {
			k.next.ServeHTTP(w, r)
			return
		}
		k.serveRecorded(w, r, began, k.record)
		return
	}
	switch {
	case isConfig:
		body, release, err := readBody(r)
		at := time.Now()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		k.record(began, at, body)
		release()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte("{}"))
	case r.Method == http.MethodGet && r.URL.Path == "/status":
		k.mu.Lock()
		d := k.digest
		k.mu.Unlock()
		if d == "" {
			d = "00000000000000000000000000000000"
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"configuration_hash":%q,"server":{"connections_accepted":1}}`, d)
	case r.Method == http.MethodGet && r.URL.Path == "/":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"version":"3.10.0","hostname":"recording-kong","node_id":"00000000-0000-4000-8000-000000000001",` +
			`"configuration":{"database":"off","router_flavor":"traditional_compatible"},` +
			`"plugins":{"available_on_server":{}}}`))
	default:
		k.mu.Lock()
		k.other[r.Method+" "+r.URL.Path]++
		k.mu.Unlock()
		http.NotFound(w, r)
	}
}

// isRouteWrite reports whether r writes a route (database mode: PUT /routes/{id}, or under
// its service).
func isRouteWrite(r *http.Request) bool {
	switch r.Method {
	case http.MethodPut, http.MethodPost, http.MethodPatch:
		return strings.HasPrefix(r.URL.Path, "/routes") || strings.HasPrefix(r.URL.Path, "/services/") && strings.Contains(r.URL.Path, "/routes")
	}
	return false
}

// serveRecorded hands r to next and, when next took it, records its body with record.
func (k *recordingKong) serveRecorded(w http.ResponseWriter, r *http.Request, began time.Time, record func(began, at time.Time, body []byte)) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	sw := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
	k.next.ServeHTTP(sw, r)
	if sw.code < 300 {
		record(began, time.Now(), body)
	}
}

// recordRoute keeps a route's write (database mode) as a push holding every host written so
// far, and marks the awaited hosts it carries.
func (k *recordingKong) recordRoute(began, at time.Time, body []byte) {
	var route struct {
		Hosts []string `json:"hosts"`
	}
	_ = json.Unmarshal(body, &route)
	k.mu.Lock()
	if k.dbHosts == nil {
		k.dbHosts = map[string]bool{}
	}
	for _, h := range route.Hosts {
		k.dbHosts[h] = true
	}
	p := push{at: at, began: began, hosts: len(k.dbHosts), size: len(body)}
	k.mu.Unlock()
	k.note(p, body)
}

// record keeps the push (its headers read at began, its body at at) and marks every awaited
// host the body carries.
func (k *recordingKong) record(began, at time.Time, body []byte) {
	// konductor sends the configuration as a string, {"config": "..."}, as Kong accepts it;
	// Kong's configuration_hash is then the md5 of that string.
	size := len(body)
	body, release := configOf(body)
	defer release()
	sum := md5.Sum(body) //nolint:gosec // Kong's configuration_hash, not a security check
	p := push{at: at, began: began, digest: hex.EncodeToString(sum[:]), size: size}
	k.mu.Lock()
	complete := k.completeLocked()
	k.mu.Unlock()
	if !complete {
		p.hosts = countHosts(body)
	}
	k.note(p, body)
}

// note keeps p, whose configuration is body, and marks every awaited host body carries.
func (k *recordingKong) note(p push, body []byte) {
	began, at := p.began, p.at
	k.mu.Lock()
	awaited := make([]string, 0, len(k.markers))
	for host, seen := range k.markers {
		if seen.at.IsZero() {
			awaited = append(awaited, host)
		}
	}
	k.mu.Unlock()

	var carriedHosts []string
	for _, host := range awaited {
		if bytes.Contains(body, []byte(`"`+host+`"`)) {
			carriedHosts = append(carriedHosts, host)
		}
	}

	k.mu.Lock()
	k.pushes = append(k.pushes, p)
	k.digest = p.digest
	for _, host := range carriedHosts {
		if k.markers[host].at.IsZero() {
			k.markers[host] = carried{began: began, at: at}
		}
	}
	k.mu.Unlock()
	select {
	case k.notify <- struct{}{}:
	default:
	}
}

func (k *recordingKong) completeLocked() bool {
	for _, p := range k.pushes {
		if p.hosts >= k.complete {
			return true
		}
	}
	return false
}

// await registers host as the marker of a change; carriedAt reports when a push first held it.
func (k *recordingKong) await(host string) {
	k.mu.Lock()
	k.markers[host] = carried{}
	k.mu.Unlock()
}

func (k *recordingKong) carriedAt(host string) time.Time {
	return k.carriedBy(host).at
}

// carriedBy is when the first push that carried host arrived (zero while none did).
func (k *recordingKong) carriedBy(host string) carried {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.markers[host]
}

// bodySizes are the bytes of the first complete push's body and of the last push's (0 while
// none came).
func (k *recordingKong) bodySizes() (first, last int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, p := range k.pushes {
		if p.hosts >= k.complete {
			first = p.size
			break
		}
	}
	if n := len(k.pushes); n > 0 {
		last = k.pushes[n-1].size
	}
	return first, last
}

// firstCompletePush returns the arrival of the first push carrying every host.
func (k *recordingKong) firstCompletePush() (time.Time, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, p := range k.pushes {
		if p.hosts >= k.complete {
			return p.at, true
		}
	}
	return time.Time{}, false
}

func (k *recordingKong) pushCount() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.pushes)
}

func (k *recordingKong) unserved() map[string]int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return maps.Clone(k.other)
}

// countHosts counts the distinct route hosts of a declarative configuration.
func countHosts(body []byte) int {
	type route struct {
		Hosts []string `json:"hosts"`
	}
	var cfg struct {
		Services []struct {
			Routes []route `json:"routes"`
		} `json:"services"`
		Routes []route `json:"routes"`
	}
	if err := json.Unmarshal(body, &cfg); err != nil {
		return 0
	}
	seen := map[string]struct{}{}
	add := func(rs []route) {
		for _, r := range rs {
			for _, h := range r.Hosts {
				seen[h] = struct{}{}
			}
		}
	}
	add(cfg.Routes)
	for _, s := range cfg.Services {
		add(s.Routes)
	}
	return len(seen)
}
