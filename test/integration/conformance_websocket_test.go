package integration

import (
	"context"
	"net"

	"golang.org/x/net/websocket"
)

// conformanceWebSocketDialer is the suite's WebSocket dialer with every Gateway address sent
// to the emulator's proxy, as the HTTP and gRPC clients' dialers do.
type conformanceWebSocketDialer struct {
	dial func(ctx context.Context, network, address string) (net.Conn, error)
}

func (d *conformanceWebSocketDialer) Dial(url, protocol, origin string) (*websocket.Conn, error) {
	cfg, err := websocket.NewConfig(url, origin)
	if err != nil {
		return nil, err
	}
	if protocol != "" {
		cfg.Protocol = []string{protocol}
	}
	addr := cfg.Location.Host
	if cfg.Location.Port() == "" {
		port := "80"
		if cfg.Location.Scheme == "wss" {
			port = "443"
		}
		addr = net.JoinHostPort(cfg.Location.Hostname(), port)
	}
	conn, err := d.dial(context.Background(), "tcp", addr)
	if err != nil {
		return nil, err
	}
	ws, err := websocket.NewClient(cfg, conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return ws, nil
}
