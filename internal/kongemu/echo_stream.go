package kongemu

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
)

// StreamEchoBackend answers as the conformance suite's TCP and UDP echo servers do
// (sigs.k8s.io/gateway-api/conformance/echo-basic, tcpserver and udpechoserver): over TCP a
// welcome line, then "PONG" to "PING", whether the connection is TLS to "IS_TLS", and a JSON
// description of the connection (which pod of which namespace answered, the TLS server name)
// to "TEST"; over UDP a JSON echo of each datagram.
type StreamEchoBackend struct {
	Namespace, Ingress, Service, Pod string
	// TCPPort is the port it reports (the echo server's TCP_PORT).
	TCPPort string
	// TLS, when set, terminates TLS before answering (the echo server's TLS port).
	TLS *tls.Config
}

// TCPEchoWelcome is the TCP echo server's first line (tcpserver.WelcomeMessage).
const TCPEchoWelcome = "Gateway API Test TCP Server\n"

// TCPEchoAssertions is the TCP echo server's answer to "TEST" (tcpserver.TCPAssertions).
type TCPEchoAssertions struct {
	Namespace string           `json:"namespace"`
	Ingress   string           `json:"ingress"`
	Service   string           `json:"service"`
	Pod       string           `json:"pod"`
	TCPPort   string           `json:"tcpport"`
	IsTLS     bool             `json:"isTLS"`
	TLS       *TCPEchoTLSState `json:"tls,omitempty"`
}

// TCPEchoTLSState is what the TCP echo server reports of a TLS connection.
type TCPEchoTLSState struct {
	Version            string `json:"version"`
	ServerName         string `json:"serverName"`
	NegotiatedProtocol string `json:"negotiatedProtocol,omitempty"`
	CipherSuite        string `json:"cipherSuite"`
}

// UDPEchoAnswer is the UDP echo server's answer (udpechoserver.EchoResponse).
type UDPEchoAnswer struct {
	Request   string `json:"request"`
	Namespace string `json:"namespace"`
	Ingress   string `json:"ingress"`
	Service   string `json:"service"`
	Pod       string `json:"pod"`
}

func (b *StreamEchoBackend) ServeConn(conn net.Conn) {
	defer conn.Close()
	a := TCPEchoAssertions{Namespace: b.Namespace, Ingress: b.Ingress, Service: b.Service, Pod: b.Pod, TCPPort: b.TCPPort}
	if b.TLS != nil {
		tc := tls.Server(conn, b.TLS)
		if tc.Handshake() != nil {
			return
		}
		state := tc.ConnectionState()
		a.IsTLS = true
		a.TLS = &TCPEchoTLSState{Version: tls.VersionName(state.Version), ServerName: state.ServerName,
			NegotiatedProtocol: state.NegotiatedProtocol, CipherSuite: tls.CipherSuiteName(state.CipherSuite)}
		conn = tc
	}
	payload, _ := json.Marshal(a)
	if _, err := fmt.Fprint(conn, TCPEchoWelcome); err != nil {
		return
	}
	lines := bufio.NewScanner(conn)
	for lines.Scan() {
		switch lines.Text() {
		case "TEST":
			fmt.Fprintf(conn, "%s\n", payload)
		case "IS_TLS":
			fmt.Fprintf(conn, "%t\n", a.IsTLS)
		case "PING":
			fmt.Fprint(conn, "PONG\n")
		}
	}
}

func (b *StreamEchoBackend) Answer(datagram []byte) []byte {
	out, _ := json.Marshal(UDPEchoAnswer{Request: string(datagram), Namespace: b.Namespace, Ingress: b.Ingress, Service: b.Service, Pod: b.Pod})
	return out
}
