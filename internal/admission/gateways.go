package admission

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kong/go-kong/kong"
)

// gatewayTimeout bounds one gateway's answer, well within the API server's default webhook
// timeout (10 s), so that a hung gateway leaves time to ask the next one.
const gatewayTimeout = 3 * time.Second

// KongGateways asks the gateways' Admin APIs, in order, until one answers.
type KongGateways func() []*kong.Client

// ValidatePlugin implements GatewaySchemas.
func (g KongGateways) ValidatePlugin(ctx context.Context, plugin *kong.Plugin) (bool, string, error) {
	var errs []error
	for _, c := range g() {
		attempt, cancel := context.WithTimeout(ctx, gatewayTimeout)
		ok, msg, err := c.Plugins.Validate(attempt, plugin)
		cancel()
		if err == nil {
			return ok, msg, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", c.BaseRootURL(), err))
	}
	if len(errs) == 0 {
		return false, "", errors.New("no gateway known")
	}
	return false, "", errors.Join(errs...)
}
