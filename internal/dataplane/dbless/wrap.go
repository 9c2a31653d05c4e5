package dbless

import (
	"encoding/json"
	"errors"

	"github.com/konductor/konductor/internal/kongstate"
)

// BodyPrefix and BodySuffix surround the configuration, escaped as the content of a JSON
// string, in the body of POST /config: {"config":"<config>"} (post says why a string).
const (
	BodyPrefix = `{"config":"`
	BodySuffix = `"}`
)

// Body is config as the body {"config": "<config>"}: what json.Marshal of that struct gives
// a decoder, without its cost (kongstate.AppendJSONStringContent).
func Body(config []byte) []byte {
	return kongstate.QuotedBody(config, BodyPrefix, BodySuffix)
}

// configOf is the configuration a Body holds.
func configOf(body []byte) ([]byte, error) {
	var b struct {
		Config *string `json:"config"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, err
	}
	if b.Config == nil {
		return nil, errors.New("no configuration in the body")
	}
	return []byte(*b.Config), nil
}
