package konnect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/kong/go-kong/kong"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// License is the control plane's Kong Enterprise license.
type License struct {
	ID        string `json:"id"`
	Payload   string `json:"payload"`
	UpdatedAt int64  `json:"updated_at"`
	CreatedAt int64  `json:"created_at,omitempty"`
}

// Kong is the license as Kong's licenses entity.
func (l License) Kong() *kong.License {
	return &kong.License{ID: kong.String(l.ID), Payload: kong.String(l.Payload)}
}

// expired reports whether the payload's license_expiration_date (YYYY-MM-DD) has passed; a
// payload that does not say is taken as valid.
func (l License) expired(now time.Time) bool {
	var p struct {
		License struct {
			Payload struct {
				Expiration string `json:"license_expiration_date"`
			} `json:"payload"`
		} `json:"license"`
	}
	if json.Unmarshal([]byte(l.Payload), &p) != nil || p.License.Payload.Expiration == "" {
		return false
	}
	t, err := time.Parse(time.DateOnly, p.License.Payload.Expiration)
	return err == nil && t.Before(now)
}

// LicenseOptions configure a LicenseAgent (KIC's flags).
type LicenseOptions struct {
	// InitialPeriod is how often the license is asked for while none (valid) is held,
	// Period once one is.
	InitialPeriod, Period time.Duration
	// Store keeps the license in a Secret (--konnect-license-storage-enabled); nil: not kept.
	Store *SecretStore
	// Changed is called when the license held changes (a round renders it).
	Changed func()
	Log     logr.Logger
}

// LicenseAgent polls the control plane's license (KIC's license agent): at start, then every
// InitialPeriod until a valid one is held, then every Period. A newer license replaces the
// one held; an answer without one or an error never takes it away. When Konnect cannot be
// asked, the license stored in the Secret is taken, so that a restart during a Konnect outage
// still has it.
type LicenseAgent struct {
	api  *apiClient
	opts LicenseOptions

	mu      sync.Mutex
	license *License
}

// NewLicenseAgent returns the agent of the control plane o names.
func NewLicenseAgent(o Options, opts LicenseOptions) *LicenseAgent {
	return &LicenseAgent{api: newAPIClient(o), opts: opts}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every replica holds the
// license, so that a new leader renders it at once (KIC runs its agent on the leader only;
// the standbys of konductor translate too).
func (a *LicenseAgent) NeedLeaderElection() bool { return false }

// License is the license held, nil while none.
func (a *LicenseAgent) License() *kong.License {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.license == nil {
		return nil
	}
	return a.license.Kong()
}

// Start polls until ctx ends.
func (a *LicenseAgent) Start(ctx context.Context) error {
	for {
		if err := a.Poll(ctx); err != nil && ctx.Err() == nil {
			a.opts.Log.Error(err, "Failed to get the license from Konnect")
		}
		period := a.opts.Period
		a.mu.Lock()
		if a.license == nil || a.license.expired(time.Now()) {
			period = a.opts.InitialPeriod
		}
		a.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(period):
		}
	}
}

// Poll asks Konnect for the license once (the Secret when Konnect cannot be asked).
func (a *LicenseAgent) Poll(ctx context.Context) error {
	l, err := a.fetch(ctx)
	if err != nil {
		if a.opts.Store == nil {
			return err
		}
		stored, serr := a.opts.Store.Load(ctx)
		if serr != nil || stored == nil {
			return errors.Join(err, serr)
		}
		a.opts.Log.Info("Konnect could not be asked for the license: using the stored one", "error", err.Error())
		l = stored
	} else if l != nil && a.opts.Store != nil {
		if serr := a.opts.Store.Save(ctx, *l); serr != nil {
			a.opts.Log.Error(serr, "Failed to store the Konnect license")
		}
	}
	if l == nil {
		return nil
	}
	a.mu.Lock()
	take := a.license == nil || a.license.expired(time.Now()) || l.UpdatedAt > a.license.UpdatedAt
	if take {
		a.license = l
	}
	a.mu.Unlock()
	if take && a.opts.Changed != nil {
		a.opts.Changed()
	}
	return nil
}

// fetch is GET /v1/licenses: nil when the control plane has none (404).
func (a *LicenseAgent) fetch(ctx context.Context) (*License, error) {
	var out struct {
		Items []License `json:"items"`
	}
	if err := a.api.do(ctx, http.MethodGet, "/v1/licenses", nil, &out); err != nil {
		var se *statusError
		if errors.As(err, &se) && se.code == http.StatusNotFound {
			return nil, nil
		}
		return nil, err
	}
	if len(out.Items) == 0 {
		return nil, errors.New("Konnect answered no license")
	}
	l := out.Items[0]
	if l.Payload == "" || l.ID == "" || l.UpdatedAt == 0 {
		return nil, errors.New("Konnect answered an incomplete license")
	}
	return &l, nil
}

// SecretStore keeps the license in the Secret konnect-license-<control plane> of the
// controller's namespace (KIC's: keys payload, id, updated_at; label
// konghq.com/managed-by=kong-ingress-controller), made when missing.
// It is read from the API server (Reader), not from the cache: with --watch-namespace the
// controller's own namespace may not be cached, and a restart during a Konnect outage must
// find the license whatever the cache holds.
type SecretStore struct {
	Client    client.Client
	Reader    client.Reader
	Namespace string
	Name      string
}

// NewSecretStore is the store of control plane cpID in namespace, written with c and read
// with reader.
func NewSecretStore(c client.Client, reader client.Reader, namespace, cpID string) *SecretStore {
	return &SecretStore{Client: c, Reader: reader, Namespace: namespace, Name: "konnect-license-" + cpID}
}

// Save writes l into the Secret.
func (s *SecretStore) Save(ctx context.Context, l License) error {
	data := map[string][]byte{"payload": []byte(l.Payload), "id": []byte(l.ID), "updated_at": []byte(strconv.FormatInt(l.UpdatedAt, 10))}
	var sec corev1.Secret
	err := s.Reader.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: s.Name}, &sec)
	if apierrors.IsNotFound(err) {
		sec = corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name,
			Labels: map[string]string{"konghq.com/managed-by": "kong-ingress-controller"}}, Type: corev1.SecretTypeOpaque, Data: data}
		return s.Client.Create(ctx, &sec)
	}
	if err != nil {
		return err
	}
	if maps.EqualFunc(sec.Data, data, bytes.Equal) {
		return nil // every replica polls: the same license is not written again
	}
	sec.Data = data
	return s.Client.Update(ctx, &sec)
}

// Load reads the Secret: nil when there is none.
func (s *SecretStore) Load(ctx context.Context) (*License, error) {
	var sec corev1.Secret
	if err := s.Reader.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: s.Name}, &sec); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the stored Konnect license: %w", err)
	}
	updated, err := strconv.ParseInt(string(sec.Data["updated_at"]), 10, 64)
	if err != nil || len(sec.Data["payload"]) == 0 || len(sec.Data["id"]) == 0 {
		return nil, fmt.Errorf("the stored Konnect license %s/%s is incomplete", s.Namespace, s.Name)
	}
	return &License{ID: string(sec.Data["id"]), Payload: string(sec.Data["payload"]), UpdatedAt: updated}, nil
}
