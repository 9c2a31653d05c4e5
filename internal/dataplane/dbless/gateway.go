package dbless

import (
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // Kong's configuration_hash is an md5; compared, not trusted
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/kong/go-kong/kong"

	"github.com/konductor/konductor/internal/kongrules"
	"github.com/konductor/konductor/internal/kongstate"
)

// EmptyConfigurationHash is what GET /status reports while a DB-less Kong holds no
// configuration: after a start or a restart, before anything was loaded.
const EmptyConfigurationHash = "00000000000000000000000000000000"

// Outcome says what a Push did.
type Outcome int

const (
	// Pushed means the configuration was sent and accepted.
	Pushed Outcome = iota
	// Unchanged means the gateway already holds this configuration; nothing was sent.
	Unchanged
	// Restored means the gateway had lost its configuration and was sent the last good one,
	// because the current one is known to be rejected.
	Restored
)

func (o Outcome) String() string {
	switch o {
	case Pushed:
		return "pushed"
	case Unchanged:
		return "unchanged"
	case Restored:
		return "restored"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Gateway is one DB-less Kong. Push is safe to call from one goroutine at a time; the
// mutex only guards against misuse.
type Gateway struct {
	client *kong.Client

	mu sync.Mutex
	// bodyLimit is the gateway's Admin API body limit (SetBodyLimit), 0 when none is known.
	bodyLimit int64
	lastGood  kongstate.Body // the body (Body) of the configuration the gateway last accepted
	lastHash  string         // the configuration_hash Kong reported right after taking lastGood
	// lastHashOfLastGood is set when lastHash was read right after this process sent
	// lastGood: it is then kongHash of lastGood's configuration, so a configuration has that
	// hash exactly when it is lastGood's, and the md5 of every new configuration (megabytes)
	// need not be taken.
	lastHashOfLastGood bool
	// learned is set once the gateway's state at this process's start was read (learn);
	// heldAtStart is the configuration it held then (GET /config), nil when none.
	learned     bool
	heldAtStart []byte
	// rejected are the configurations the gateway refused, newest last, at most
	// rememberRejections: with fallback configuration the loop sends a refused configuration
	// and then its fallback every round, and the refused one must not be sent again when the
	// fallback was taken in between.
	rejected []rejection
}

// rejection is a refused configuration, by its size and digest: the digest of a
// configuration is only taken when a refused one has its size.
type rejection struct {
	size   int
	digest [sha256.Size]byte
	err    *RejectedError
}

// rememberRejections bounds the refused configurations remembered per gateway.
const rememberRejections = 8

func (g *Gateway) rejectionOf(body kongstate.Body) *RejectedError {
	var digest []byte
	for _, r := range g.rejected {
		if r.size != body.Len() {
			continue
		}
		if digest == nil {
			digest = body.Hash(sha256.New())
		}
		if bytes.Equal(r.digest[:], digest) {
			return r.err
		}
	}
	return nil
}

func (g *Gateway) remember(body kongstate.Body, err *RejectedError) {
	if len(g.rejected) == rememberRejections {
		g.rejected = g.rejected[1:]
	}
	r := rejection{size: body.Len(), err: err}
	copy(r.digest[:], body.Hash(sha256.New()))
	g.rejected = append(g.rejected, r)
}

// New returns a Gateway that talks through client.
func New(client *kong.Client) *Gateway {
	return &Gateway{client: client}
}

// SetBodyLimit sets the largest body the gateway takes, in bytes: its
// nginx_admin_client_max_body_size, which GET / reports (0: none, or not known). A body over
// it is not sent (Kong would answer 413 without reading it): Push returns a *RejectedError
// whose TooLarge says so, and the gateway keeps what it holds, as for any refusal.
func (g *Gateway) SetBodyLimit(limit int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.bodyLimit = limit
}

// overLimit is the refusal of body, known without sending it, when it is over the limit.
func (g *Gateway) overLimit(body kongstate.Body) *RejectedError {
	if g.bodyLimit <= 0 || int64(body.Len()) <= g.bodyLimit {
		return nil
	}
	return tooLarge(int64(body.Len()), g.bodyLimit)
}

// Push makes the gateway hold config. It sends config only when the gateway does not hold it
// already. A rejection is returned as *RejectedError, and the same configuration is not sent
// again; any other error (network, 5xx, 429) is returned as is, for the caller to retry with
// backoff.
func (g *Gateway) Push(ctx context.Context, config []byte) (Outcome, error) {
	return g.PushBody(ctx, kongstate.BodyOf(Body(config)))
}

// PushBody is Push of the configuration body holds: Body(config), which a
// kongstate.Renderer gives without escaping the whole configuration each time, nor copying
// it (QuotedDeclarativeConfig with BodyPrefix and BodySuffix).
func (g *Gateway) PushBody(ctx context.Context, body kongstate.Body) (Outcome, error) {
	return g.push(ctx, body, false)
}

// PushBodyAgain is PushBody that posts a configuration the gateway holds already (KIC's
// --enable-reverse-sync); one the gateway refused is still not sent again.
func (g *Gateway) PushBodyAgain(ctx context.Context, body kongstate.Body) (Outcome, error) {
	return g.push(ctx, body, true)
}

func (g *Gateway) push(ctx context.Context, body kongstate.Body, again bool) (Outcome, error) {
	g.mu.Lock()
	defer g.mu.Unlock()

	if !g.learned {
		if err := g.learn(ctx); err != nil {
			return Unchanged, err
		}
	}
	if g.lastHash != "" && !g.lastHashOfLastGood && g.lastHash == kongHashOfBody(body) {
		// The gateway held exactly this configuration when it last told us its hash (the
		// controller before a restart sent it): checked against its current hash below,
		// and not sent again.
		g.lastGood, g.lastHashOfLastGood = body, true
	}
	// Megabytes compared only when the sizes are equal: a change almost always changes it.
	known := !g.lastGood.IsNil() && body.Equal(g.lastGood) && !again
	rejectedBefore := g.rejectionOf(body)
	if rejectedBefore == nil && !known {
		// Refused before it is sent; a gateway that lost its configuration still gets the
		// last good one back below.
		rejectedBefore = g.overLimit(body)
	}
	if known || rejectedBefore != nil {
		lost, err := g.drifted(ctx)
		if err != nil {
			return Unchanged, err
		}
		switch {
		case !lost && known:
			return Unchanged, nil
		case !lost:
			return Unchanged, rejectedBefore
		case known:
			// The gateway restarted: send what it held.
		case !g.lastGood.IsNil():
			if err := g.post(ctx, g.lastGood); err != nil {
				return Restored, err
			}
			g.lastHash, g.lastHashOfLastGood = g.currentHash(ctx), true
			return Restored, rejectedBefore
		default:
			return Unchanged, rejectedBefore
		}
	}

	if err := g.post(ctx, body); err != nil {
		var rej *RejectedError
		if errors.As(err, &rej) {
			g.remember(body, rej)
		}
		return Pushed, err
	}
	g.lastGood = body
	g.lastHash, g.lastHashOfLastGood = g.currentHash(ctx), true
	return Pushed, nil
}

// learn reads what the gateway holds when this process first talks to it, so that what it
// knows survives a restart of the controller: the configuration hash (an unchanged first push
// is not sent again) and, when the gateway holds a configuration, that configuration
// (GET /config), which becomes the last good one: if the gateway later loses its
// configuration (a Kong restart) while the current one is refused, it gets back what it held
// rather than nothing. Which configurations the gateway refused before the restart cannot be
// learned (Kong keeps no record of a refusal and konductor persists nothing, as KIC): a
// refused configuration is sent once per controller process, then remembered.
func (g *Gateway) learn(ctx context.Context) error {
	st, err := g.client.Status(ctx)
	if err != nil {
		return fmt.Errorf("reading /status: %w", err)
	}
	g.learned = true
	if st.ConfigurationHash == EmptyConfigurationHash || st.ConfigurationHash == "" {
		return nil
	}
	g.lastHash = st.ConfigurationHash
	held, err := g.held(ctx)
	if err != nil {
		// Not needed to sync: without it a gateway that loses its configuration while the
		// current one is refused stays empty until a good one comes, as before.
		return nil //nolint:nilerr // best effort, see above
	}
	g.lastGood, g.heldAtStart = kongstate.BodyOf(Body(held)), held
	return nil
}

// HoldsOther reports whether the gateway holds a configuration other than body's: one it
// took from this process (the last good one), or one it held when this process first talked
// to it (its hash; the state is learned first, as Push learns it, so that this can be asked
// before any push). False when it holds nothing (a fresh or restarted Kong, as far as this
// process knows), and when what it holds is body's own configuration: sending body then
// changes nothing. The answer is what this process knows, without asking Kong again: a Kong
// that lost its configuration since is noticed by the next Push, which sends it the last good
// one back.
//
// The loop asks it before sending a fallback configuration that holds no entity
// (internal/dataplane, fallback.go): sent to a gateway that holds routes, it would wipe them;
// sent to one that holds nothing (or the stub upstream alone), it lets Kong become ready.
func (g *Gateway) HoldsOther(ctx context.Context, body kongstate.Body) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.learned {
		if err := g.learn(ctx); err != nil {
			return false, err
		}
	}
	switch {
	case g.lastGood.IsNil() && g.lastHash == "":
		return false, nil
	case !g.lastGood.IsNil() && body.Equal(g.lastGood):
		return false, nil
	case g.lastHash != "" && !g.lastHashOfLastGood && g.lastHash == kongHashOfBody(body):
		// Held when this process started (lastGood is then Kong's export, other bytes).
		return false, nil
	}
	return true, nil
}

// held is the configuration the gateway holds, as GET /config exports it ({"config": "<yaml>"}).
func (g *Gateway) held(ctx context.Context) ([]byte, error) {
	req, err := g.client.NewRequest(http.MethodGet, "/config", nil, nil)
	if err != nil {
		return nil, err
	}
	var body struct {
		Config string `json:"config"`
	}
	if _, err := g.client.Do(ctx, req, &body); err != nil {
		return nil, fmt.Errorf("reading /config: %w", err)
	}
	if body.Config == "" {
		return nil, errors.New("GET /config returned no configuration")
	}
	return []byte(body.Config), nil
}

// Held is the configuration the gateway held when this process first talked to it, as
// GET /config exported it; nil when it held none, or before the first Push.
func (g *Gateway) Held() []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.heldAtStart
}

// kongHash is the configuration_hash Kong reports after taking config as a string in
// {"config": ...}: the md5 of the string.
func kongHash(config []byte) string {
	sum := md5.Sum(config) //nolint:gosec // Kong's hash
	return hex.EncodeToString(sum[:])
}

// kongHashOfBody is kongHash of the configuration body holds ("" when it holds none). A
// controller that restarts against a Kong that kept its configuration takes it before its
// first push (PushBody): the body's pieces are unescaped into the hash as they are read
// (unescapedHash). Copying the body into one slice, decoding it with encoding/json and
// hashing the copy cost 33-39 cpu-ms and 15 MB at 3,000 Ingresses on the start's path;
// reading the pieces costs 12-13 cpu-ms and 33 KB (BenchmarkKongHashOfBody). A body the
// reading is not sure of (not Body's form, or an escape Body never writes) is decoded as
// before.
func kongHashOfBody(body kongstate.Body) string {
	if sum, ok := unescapedHash(body); ok {
		return sum
	}
	config, err := configOf(body.Bytes())
	if err != nil {
		return ""
	}
	return kongHash(config)
}

// drifted reports whether the gateway no longer holds what it last took from us: it lost its
// configuration (the all-zero hash: it restarted), or its hash changed since (another writer,
// for example a previous leader's late POST, replaced it).
func (g *Gateway) drifted(ctx context.Context) (bool, error) {
	st, err := g.client.Status(ctx)
	if err != nil {
		return false, fmt.Errorf("reading /status: %w", err)
	}
	if st.ConfigurationHash == EmptyConfigurationHash {
		return true, nil
	}
	return g.lastHash != "" && st.ConfigurationHash != g.lastHash, nil
}

// currentHash is the gateway's configuration_hash, or "" when it cannot be read (then only a
// lost configuration is noticed until the next push).
func (g *Gateway) currentHash(ctx context.Context) string {
	st, err := g.client.Status(ctx)
	if err != nil {
		return ""
	}
	return st.ConfigurationHash
}

// post sends body, a configuration as {"config": "<config>"} (Body): Kong then hashes the
// string itself (for a JSON object body it hashes its own re-encoding), so that the
// configuration_hash it reports is kongHash(config), which a restarted controller can compare
// with what it would send.
func (g *Gateway) post(ctx context.Context, body kongstate.Body) error {
	err := g.reloadConfig(ctx, body)
	if err == nil {
		return nil
	}
	var apiErr *kong.APIError
	switch {
	case errors.As(err, &apiErr) && apiErr.Code() == http.StatusBadRequest:
		return parseRejection(apiErr.Raw())
	case errors.As(err, &apiErr) && apiErr.Code() == http.StatusRequestEntityTooLarge:
		// Over a limit GET / did not say (or lowered since): refused as one that is known.
		rej := tooLarge(int64(body.Len()), g.bodyLimit)
		rej.Raw = apiErr.Raw()
		return rej
	}
	return err
}

// reloadConfig is go-kong's ReloadDeclarativeRawConfig (check_hash and flatten_errors on) of
// a Body read piece by piece, with its length: the request is sent as one with a
// Content-Length, as go-kong sends a []byte, without the body being copied into one slice.
func (g *Gateway) reloadConfig(ctx context.Context, body kongstate.Body) error {
	params := struct {
		CheckHash     int `url:"check_hash,omitempty"`
		FlattenErrors int `url:"flatten_errors,omitempty"`
	}{CheckHash: 1, FlattenErrors: 1}
	ctx, trace := tracePost(ctx)
	req, err := g.client.NewRequest(http.MethodPost, "/config", params, body.Reader())
	if err != nil {
		return fmt.Errorf("creating new HTTP request for /config: %w", err)
	}
	req.ContentLength = int64(body.Len())
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(body.Reader()), nil }
	resp, err := g.client.DoRAW(ctx, req)
	if err != nil {
		return fmt.Errorf("failed posting new config to /config: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if trace != nil {
		trace.answered = time.Now()
	}
	if err != nil {
		return fmt.Errorf("could not read /config %d status response body: %w", resp.StatusCode, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return kong.NewAPIErrorWithRaw(resp.StatusCode, "failed posting new config to /config", b)
	}
	return nil
}

// RejectedError is Kong's 400 answer to POST /config: the configuration is invalid; or its
// 413 answer, or a body over the gateway's limit that was not sent (TooLarge). Kong keeps the
// configuration it had.
type RejectedError struct {
	Message  string
	Entities []EntityError
	// Raw is Kong's answer as it came: what KIC's diagnostics server serves as raw-error.
	Raw []byte
	// TooLarge, when set, says the body was over the gateway's Admin API body limit.
	TooLarge *BodyTooLarge
}

// BodyTooLarge is a body over the gateway's Admin API body limit: its size and the limit, in
// bytes (Limit 0 when the gateway answered 413 to a limit GET / did not say).
type BodyTooLarge struct {
	Size, Limit int64
}

// tooLarge is the refusal of a body of size over limit, naming both and the setting to raise.
func tooLarge(size, limit int64) *RejectedError {
	return &RejectedError{Message: TooLargeMessage(size, limit), TooLarge: &BodyTooLarge{Size: size, Limit: limit}}
}

// TooLargeMessage says that a body of size bytes is over the gateway's limit and which Kong
// settings to raise (kongrules: the body buffer goes with the limit).
func TooLargeMessage(size, limit int64) string {
	of := "its limit"
	if limit > 0 {
		of = fmt.Sprintf("its limit of %d bytes", limit)
	}
	return fmt.Sprintf("the configuration body of %d bytes is over %s (Kong's %s), so it was not taken: "+
		"raise %s (and %s with it) on the gateway to at least %d bytes, or shard the configuration (docs/scaling.md)",
		size, of, kongrules.AdminMaxBodySizeKey, kongrules.AdminMaxBodySizeEnv, kongrules.AdminBodyBufferSizeEnv, size)
}

// EntityError is one flattened_errors entry: an entity Kong refused and why.
type EntityError struct {
	EntityType string
	EntityName string
	EntityID   string
	Tags       []string
	// Entity is the entity as Kong quotes it, for entities without tags (custom entities),
	// which only their fields identify.
	Entity map[string]any
	Errors []FieldError
}

// FieldError is one message about an entity; Field is empty for entity-level messages.
type FieldError struct {
	Field   string
	Message string
}

func (e *RejectedError) Error() string {
	if d := e.Detail(); d != "" {
		return "gateway rejected the configuration: " + d
	}
	return "gateway rejected the configuration"
}

// Detail is what Error says after "gateway rejected the configuration": Kong's message and
// each entity's, for a message that names the gateway itself (dataplane.RejectedError).
func (e *RejectedError) Detail() string {
	var b strings.Builder
	b.WriteString(e.Message)
	for _, ent := range e.Entities {
		for _, fe := range ent.Errors {
			fmt.Fprintf(&b, "; %s %q", ent.EntityType, ent.EntityName)
			if fe.Field != "" {
				fmt.Fprintf(&b, " %s", fe.Field)
			}
			fmt.Fprintf(&b, ": %s", fe.Message)
		}
	}
	return strings.TrimPrefix(b.String(), "; ")
}

type flatBody struct {
	Message         string `json:"message"`
	FlattenedErrors []struct {
		EntityType string          `json:"entity_type"`
		EntityName string          `json:"entity_name"`
		EntityID   string          `json:"entity_id"`
		EntityTags json.RawMessage `json:"entity_tags"`
		Entity     json.RawMessage `json:"entity"`
		Errors     []struct {
			Type    string `json:"type"`
			Field   string `json:"field"`
			Message string `json:"message"`
		} `json:"errors"`
	} `json:"flattened_errors"`
}

func parseRejection(raw []byte) *RejectedError {
	var body flatBody
	if err := json.Unmarshal(raw, &body); err != nil {
		return &RejectedError{Message: strings.TrimSpace(string(raw)), Raw: raw}
	}
	rej := &RejectedError{Message: body.Message, Raw: raw}
	for _, fe := range body.FlattenedErrors {
		ent := EntityError{EntityType: fe.EntityType, EntityName: fe.EntityName, EntityID: fe.EntityID}
		// entity_tags is only present when every tag is a string; anything else maps to no object.
		_ = json.Unmarshal(fe.EntityTags, &ent.Tags)
		_ = json.Unmarshal(fe.Entity, &ent.Entity)
		for _, e := range fe.Errors {
			ent.Errors = append(ent.Errors, FieldError{Field: e.Field, Message: e.Message})
		}
		rej.Entities = append(rej.Entities, ent)
	}
	return rej
}
