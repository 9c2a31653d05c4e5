package kongemu

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/konductor/konductor/internal/kongrouter"
)

// upgrade carries a WebSocket upgrade as nginx does for Kong: the request goes to the target
// on a connection of its own; a 101 answer joins the client's connection to it (frames then
// flow both ways until either side closes), any other answer is passed on as a response.
func (p *Proxy) upgrade(w http.ResponseWriter, out *http.Request, pw *proxyWriter, st *proxyState, d *kongrouter.Decision,
	target *kongrouter.Target, tlsUpstream bool, timeout time.Duration) forwardOutcome {
	conn, err := p.dialBackend(out.Context(), st, d, target, tlsUpstream)
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

// servePipe serves h on one end of a loopback connection of its own (over TLS with a
// server configuration) and returns the other. A loopback TCP pair rather than net.Pipe: its
// writes are buffered as a socket's are, so that a TLS handshake one side abandons (an alert
// written while the other writes) does not block both.
func servePipe(h http.Handler, serverTLS *tls.Config) (net.Conn, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			c = nil
		}
		accepted <- c
	}()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		return nil, err
	}
	server := <-accepted
	if server == nil {
		client.Close()
		return nil, errors.New("loopback connection not accepted")
	}
	if serverTLS != nil {
		server = tls.Server(server, serverTLS)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(OneConnListener(server)) }()
	return client, nil
}

// OneConnListener is a listener that hands out conn, then reports itself closed: an
// http.Server serving one connection made elsewhere (an in-process backend's).
func OneConnListener(conn net.Conn) net.Listener { return &oneConnListener{conn: conn} }

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
func (l *oneConnListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
