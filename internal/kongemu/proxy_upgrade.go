package kongemu

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/konductor/konductor/internal/kongrouter"
)

// upgrade carries a WebSocket upgrade as nginx does for Kong: the request goes to the target
// on a connection of its own; a 101 answer joins the client's connection to it (frames then
// flow both ways until either side closes), any other answer is passed on as a response.
func (p *Proxy) upgrade(w http.ResponseWriter, out *http.Request, pw *proxyWriter, target *kongrouter.Target,
	tlsUpstream bool, timeout time.Duration) forwardOutcome {
	conn, err := p.dialBackend(out.Context(), target, tlsUpstream, out.Host)
	if err != nil {
		return unreachable
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	out.RequestURI = ""
	if out.ContentLength == 0 {
		out.Body = nil
	}
	if err := out.Write(conn); err != nil {
		return unreachable
	}
	backend := bufio.NewReader(conn)
	resp, err := http.ReadResponse(backend, out)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return timedOut
		}
		return unreachable
	}
	_ = conn.SetDeadline(time.Time{})
	defer resp.Body.Close()
	for k, v := range resp.Header {
		pw.Header()[k] = v
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		pw.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(pw, resp.Body)
		pw.finish()
		return answered
	}
	pw.prepare(resp.StatusCode)
	client, buffered, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// An HTTP/2 client's stream cannot be switched to another protocol.
		http.Error(w, `{"message":"An invalid response was received from the upstream server"}`, http.StatusBadGateway)
		return answered
	}
	defer client.Close()
	resp.Header, resp.Body = w.Header(), nil // the headers as filtered; the body is the tunnel
	if err := resp.Write(buffered); err != nil || buffered.Flush() != nil {
		return answered
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(conn, buffered.Reader); done <- struct{}{} }()
	go func() { _, _ = io.Copy(client, backend); done <- struct{}{} }()
	<-done
	return answered
}

// dialBackend opens a connection to target: to the in-process backend Resolve names (served
// over an in-memory pipe) or over the network; with TLS when the service's protocol asks it.
func (p *Proxy) dialBackend(ctx context.Context, target *kongrouter.Target, tlsUpstream bool, host string) (net.Conn, error) {
	var conn net.Conn
	if p.opts.Resolve != nil {
		h := p.opts.Resolve(target.Host, target.Port)
		if h == nil {
			return nil, errors.New("nothing answers at " + target.Host)
		}
		conn = servePipe(h)
	} else {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(target.Host, strconv.Itoa(target.Port)))
		if err != nil {
			return nil, err
		}
		conn = c
	}
	if !tlsUpstream {
		return conn, nil
	}
	// Kong's default: the upstream's certificate is not verified (the service's tls_verify).
	serverName, _, err := net.SplitHostPort(host)
	if err != nil {
		serverName = host
	}
	tc := tls.Client(conn, &tls.Config{ServerName: serverName, InsecureSkipVerify: true}) //nolint:gosec // Kong's tls_verify off
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return tc, nil
}

// servePipe serves h on one end of an in-memory connection and returns the other.
func servePipe(h http.Handler) net.Conn {
	client, server := net.Pipe()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(&oneConnListener{conn: server}) }()
	return client
}

// oneConnListener hands out one connection, then reports itself closed.
type oneConnListener struct {
	mu   sync.Mutex
	conn net.Conn
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return nil, net.ErrClosed
	}
	c := l.conn
	l.conn = nil
	return c, nil
}

func (l *oneConnListener) Close() error   { return nil }
func (l *oneConnListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }
