package kongemu

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/konductor/konductor/internal/kongrouter"
)

// The emulator's stream proxy: the connections and datagrams a Kong node's stream_listen
// takes, routed by Kong's stream router (internal/kongrouter, Gateway.ProxyStream: protocols,
// snis, sources, destinations) over the configuration the emulator holds, balanced across the
// upstream's targets and handed to the backend ProxyOptions.ResolveStream names.
//
// What Kong does, as modelled here (kong/templates/nginx_kong_stream.lua, kong/runloop/
// handler.lua):
//   - A listen without "ssl" or "udp" takes TCP connections: net.protocol "tcp", no SNI.
//   - A listen with "ssl" reads the TLS ClientHello first (ssl_preread) without answering it:
//     net.protocol "tls" and the SNI. A tls_passthrough route hands the connection on as the
//     client sent it (the backend terminates TLS); any other route's TLS is terminated by Kong
//     with the certificate of the SNI (as on the HTTPS proxy listener) and the plain bytes are
//     handed on.
//   - A listen with "udp" takes datagrams: net.protocol "udp"; each datagram goes to the target
//     chosen for it and the backend's answer goes back to the client.
//   - No route, no target or nothing answering: the connection is closed (the datagram dropped).
//
// Not modelled: Kong's UDP sessions (nginx keeps one upstream per client address and port
// while datagrams flow; here each datagram is balanced on its own, the same for clients that
// send one datagram per socket, as the conformance suite's do); TLS from Kong to a service of
// protocol tls; the proxy_protocol flag; the stream plugins.
//
// A stream listen's port is the destination port the router compares (net.dst.port), which is
// why a TCPRoute's destinations are its Gateway listener's port: Kong must listen on it.

// StreamBackend answers what the stream proxy hands to one target's address.
type StreamBackend interface {
	// ServeConn takes a TCP connection and closes it when done. For TLS passthrough it reads
	// the client's TLS bytes from the start.
	ServeConn(conn net.Conn)
	// Answer is the reply to one UDP datagram (nil: none).
	Answer(datagram []byte) []byte
}

// StreamServer serves a Proxy's stream listens.
type StreamServer struct {
	p *Proxy
	// Addrs are the listens' addresses, in the order given ("udp:" before a UDP one's).
	Addrs     []string
	listeners []net.Listener
	packets   []net.PacketConn
	// defaultCert is served when Kong terminates TLS for a name no certificate has.
	defaultCert tls.Certificate
	wg          sync.WaitGroup
	closed      chan struct{}
}

// streamListen is one stream_listen entry: an address and Kong's flags.
type streamListen struct {
	addr     string
	ssl, udp bool
}

func parseStreamListen(l string) (streamListen, error) {
	fields := strings.Fields(l)
	if len(fields) == 0 {
		return streamListen{}, errors.New("empty stream_listen entry")
	}
	if _, _, err := net.SplitHostPort(fields[0]); err != nil {
		return streamListen{}, fmt.Errorf("stream_listen %q: %w", l, err)
	}
	return streamListen{addr: fields[0], ssl: slices.Contains(fields[1:], "ssl"), udp: slices.Contains(fields[1:], "udp")}, nil
}

// StartStreams serves the proxy's stream subsystem on the listens given, written as Kong's
// stream_listen entries ("127.0.0.1:3000", "127.0.0.1:443 ssl", "127.0.0.1:5300 udp").
func (p *Proxy) StartStreams(listens []string) (*StreamServer, error) {
	s := &StreamServer{p: p, closed: make(chan struct{})}
	def, _, err := selfSigned()
	if err != nil {
		return nil, err
	}
	s.defaultCert = def
	for _, l := range listens {
		sl, err := parseStreamListen(l)
		if err == nil && sl.udp {
			var pc net.PacketConn
			if pc, err = net.ListenPacket("udp", sl.addr); err == nil {
				s.packets = append(s.packets, pc)
				s.Addrs = append(s.Addrs, "udp:"+pc.LocalAddr().String())
				s.wg.Add(1)
				go s.servePackets(pc)
			}
		} else if err == nil {
			var ln net.Listener
			if ln, err = net.Listen("tcp", sl.addr); err == nil {
				s.listeners = append(s.listeners, ln)
				s.Addrs = append(s.Addrs, ln.Addr().String())
				s.wg.Add(1)
				go s.serveConns(ln, sl.ssl)
			}
		}
		if err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Close stops the listens; connections already handed on are the backends'.
func (s *StreamServer) Close() error {
	select {
	case <-s.closed:
		return nil
	default:
	}
	close(s.closed)
	for _, ln := range s.listeners {
		_ = ln.Close()
	}
	for _, pc := range s.packets {
		_ = pc.Close()
	}
	s.wg.Wait()
	return nil
}

func (s *StreamServer) serveConns(ln net.Listener, ssl bool) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go s.serveConn(c, ssl)
	}
}

// streamRequest is the router's view of a connection: its client and the listen it reached.
func streamRequest(scheme string, client, server net.Addr) *kongrouter.StreamRequest {
	req := &kongrouter.StreamRequest{Scheme: scheme}
	req.ClientIP, req.ClientPort = splitAddr(client)
	req.ServerIP, req.ServerPort = splitAddr(server)
	return req
}

func splitAddr(a net.Addr) (string, int) {
	host, port, _ := net.SplitHostPort(a.String())
	p, _ := strconv.Atoi(port)
	return host, p
}

// streamTarget routes req and balances it to a backend; nil when Kong would close.
func (p *Proxy) streamTarget(st *proxyState, network string, req *kongrouter.StreamRequest) (*kongrouter.Decision, StreamBackend) {
	if st.err != nil || p.opts.ResolveStream == nil {
		return nil, nil
	}
	d, err := st.gateway.ProxyStream(req)
	if err != nil || d == nil {
		return nil, nil
	}
	retries := 5
	if s := d.Match.Service; s != nil && s.Retries != nil {
		retries = *s.Retries
	}
	// Like HTTP, a target nothing answers at is given up for the next, up to the retries.
	for try := 0; try <= retries; try++ {
		target, exit := st.gateway.PickTarget(d)
		if exit != nil {
			return nil, nil
		}
		if b := p.opts.ResolveStream(network, target.Host, target.Port); b != nil {
			return d, b
		}
	}
	return nil, nil
}

// serveConn routes one TCP connection and hands it to its backend.
func (s *StreamServer) serveConn(c net.Conn, ssl bool) {
	p := s.p
	req := streamRequest("tcp", c.RemoteAddr(), c.LocalAddr())
	conn := c
	if ssl {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		sni, peeked, err := peekClientHello(c)
		_ = c.SetReadDeadline(time.Time{})
		if err != nil {
			c.Close()
			return
		}
		req.Scheme, req.SNI = "tls", sni
		conn = &replayConn{Conn: c, r: io.MultiReader(bytes.NewReader(peeked), c)}
	}
	st := p.state()
	d, backend := p.streamTarget(st, "tcp", req)
	if backend == nil {
		c.Close()
		return
	}
	if ssl && !slices.ContainsFunc(d.Match.Route.Protocols, func(p *string) bool { return p != nil && *p == "tls_passthrough" }) {
		conn = tls.Server(conn, &tls.Config{MinVersion: tls.VersionTLS12,
			GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
				return p.certificateFor(hello, &s.defaultCert)
			}})
	}
	backend.ServeConn(conn)
}

// servePackets routes each datagram and sends the backend's answer back to its client.
func (s *StreamServer) servePackets(pc net.PacketConn) {
	defer s.wg.Done()
	buf := make([]byte, 65535)
	for {
		n, client, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		datagram := append([]byte(nil), buf[:n]...)
		st := s.p.state()
		_, backend := s.p.streamTarget(st, "udp", streamRequest("udp", client, pc.LocalAddr()))
		if backend == nil {
			continue
		}
		if answer := backend.Answer(datagram); answer != nil {
			_, _ = pc.WriteTo(answer, client)
		}
	}
}

// errPeeked stops a handshake once the ClientHello is read.
var errPeeked = errors.New("client hello read")

// peekClientHello reads a TLS ClientHello off c without answering it (nginx's ssl_preread):
// the server name it asks for and the bytes read, to be replayed to whoever takes the
// connection. A connection that does not start with a ClientHello is an error.
func peekClientHello(c net.Conn) (string, []byte, error) {
	var read bytes.Buffer
	sni, seen := "", false
	err := tls.Server(readOnlyConn{r: io.TeeReader(c, &read)}, &tls.Config{
		GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			sni, seen = hello.ServerName, true
			return nil, errPeeked
		},
	}).Handshake()
	if !seen {
		return "", nil, fmt.Errorf("no TLS ClientHello: %w", err)
	}
	return sni, read.Bytes(), nil
}

// readOnlyConn is a net.Conn that reads r and writes nowhere (the peek must not answer).
type readOnlyConn struct {
	net.Conn
	r io.Reader
}

func (c readOnlyConn) Read(b []byte) (int, error)  { return c.r.Read(b) }
func (c readOnlyConn) Write(b []byte) (int, error) { return 0, io.ErrClosedPipe }

// replayConn reads what was peeked before the rest of the connection.
type replayConn struct {
	net.Conn
	r io.Reader
}

func (c *replayConn) Read(b []byte) (int, error) { return c.r.Read(b) }
