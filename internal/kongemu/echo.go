package kongemu

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/websocket"
)

// EchoBackend answers as the Gateway API conformance suite's echo server does
// (sigs.k8s.io/gateway-api/conformance/echo-basic): a JSON description of the request it
// received (path, host, method, protocol, headers, and which pod of which namespace answered),
// "/health", "/status/<code>", "?delay=<duration>", the X-Echo-Set-Header response headers,
// and "/ws", a WebSocket that echoes each frame.
// Tests put it behind the proxy's resolver, so that no request leaves the process.
type EchoBackend struct {
	Namespace, Ingress, Service, Pod string
	// HTTPPort is the port it reports (the echo server's HTTP_PORT).
	HTTPPort string
}

// EchoResponse is what EchoBackend answers (the suite's CapturedRequest).
type EchoResponse struct {
	Path      string              `json:"path"`
	Host      string              `json:"host"`
	Method    string              `json:"method"`
	Proto     string              `json:"proto"`
	Headers   map[string][]string `json:"headers"`
	HTTPPort  string              `json:"httpPort"`
	Namespace string              `json:"namespace"`
	Ingress   string              `json:"ingress"`
	Service   string              `json:"service"`
	Pod       string              `json:"pod"`
	TLS       *EchoTLS            `json:"tls,omitempty"`
}

// EchoTLS describes the TLS connection the request came on (echo-basic's TLSAssertions).
type EchoTLS struct {
	Version            string   `json:"version"`
	PeerCertificates   []string `json:"peerCertificates,omitempty"`
	ServerName         string   `json:"serverName"`
	NegotiatedProtocol string   `json:"negotiatedProtocol,omitempty"`
	CipherSuite        string   `json:"cipherSuite"`
}

func echoTLS(cs *tls.ConnectionState) *EchoTLS {
	if cs == nil {
		return nil
	}
	out := &EchoTLS{ServerName: cs.ServerName, NegotiatedProtocol: cs.NegotiatedProtocol,
		CipherSuite: tls.CipherSuiteName(cs.CipherSuite)}
	switch cs.Version {
	case tls.VersionTLS13:
		out.Version = "TLSv1.3"
	case tls.VersionTLS12:
		out.Version = "TLSv1.2"
	}
	for _, c := range cs.PeerCertificates {
		out.PeerCertificates = append(out.PeerCertificates, string(pemEncode("CERTIFICATE", c.Raw)))
	}
	return out
}

var echoStatusPath = regexp.MustCompile(`^/status/(\d\d\d)$`)

func (b *EchoBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/health":
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("OK"))
		return
	case r.URL.Path == "/ws":
		if _, ok := w.(http.Hijacker); !ok {
			// Not an upgrade the proxy carries (it serves those on a connection of their
			// own): echo-basic answers a request that is no WebSocket handshake 400.
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		websocket.Handler(func(ws *websocket.Conn) { _, _ = io.Copy(ws, ws) }).ServeHTTP(w, r)
		return
	case strings.HasPrefix(r.URL.Path, "/status/"):
		code := http.StatusBadRequest
		if m := echoStatusPath.FindStringSubmatch(r.RequestURI); m != nil {
			code, _ = strconv.Atoi(m[1])
		}
		w.WriteHeader(code)
		return
	}
	if d := r.URL.Query().Get("delay"); d != "" {
		delay, err := time.ParseDuration(d)
		if err != nil {
			http.Error(w, fmt.Sprintf(`{"message":%q}`, err.Error()), http.StatusInternalServerError)
			return
		}
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	body, _ := json.MarshalIndent(EchoResponse{Path: r.RequestURI, Host: r.Host, Method: r.Method, Proto: r.Proto,
		Headers: r.Header, HTTPPort: b.HTTPPort, Namespace: b.Namespace, Ingress: b.Ingress, Service: b.Service, Pod: b.Pod, TLS: echoTLS(r.TLS)}, "", " ")
	for _, list := range r.Header["X-Echo-Set-Header"] {
		for _, kv := range strings.Split(list, ",") {
			name, value, _ := strings.Cut(strings.TrimSpace(kv), ":")
			if len(w.Header()[name]) == 0 {
				w.Header()[name] = []string{value}
			} else {
				w.Header()[name][0] += "," + strings.TrimSpace(value)
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(body)
}
