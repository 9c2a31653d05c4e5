package status

import (
	"time"

	"github.com/konductor/konductor/internal/dataplane"
)

// KonnectPush records an upload of the configuration to a Konnect control plane as KIC does:
// with the gateways' push metrics, protocol "deck", dataplane the control plane's URL
// (internal/konnect.Recorder).
func (m *Metrics) KonnectPush(url string, err error, took time.Duration) {
	if m == nil {
		return
	}
	m.push(pushMetrics{m.pushCount, m.pushDuration, m.pushLastSuccess, m.pushBroken, m.pushSize}, url, dataplane.ProtocolDeck, err, took, 0)
}
