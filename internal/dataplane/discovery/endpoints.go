package discovery

import (
	"fmt"
	"sort"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// AdminAPI is one discovered Kong Admin API.
type AdminAPI struct {
	// URL is https://<pod IP>:<port> (IPv6 in brackets), as KIC forms it.
	URL string
	// ServerName is the TLS server name KIC sends: pod.<service>.<namespace>.svc, which the
	// wildcard certificate *.<service>.<namespace>.svc of Kong's charts and operator matches.
	ServerName string
	// Pod is the endpoint's Pod.
	Pod types.NamespacedName
}

// ServerName is the TLS server name of the Admin APIs behind svc (KIC's
// internal/adminapi: "pod.<service>.<namespace>.svc").
func ServerName(svc types.NamespacedName) string {
	return fmt.Sprintf("pod.%s.%s.svc", svc.Name, svc.Namespace)
}

// AdminAPIs lists the Admin APIs of svc in its EndpointSlices, by KIC's rules: ports whose
// name is in portNames; endpoints backed by a Pod, with an address, not terminating; the first
// address of each (an endpoint's addresses are interchangeable). The result is sorted by URL,
// without duplicates.
//
// Unlike KIC 2's first versions, an endpoint that is not ready is not left out: Kong's own
// readiness (/status/ready) stays false in DB-less mode until a configuration is loaded, so
// leaving not-ready endpoints out would never configure a new Kong. Whether a gateway can take
// a configuration is checked on the gateway itself (Set).
func AdminAPIs(slices []discoveryv1.EndpointSlice, svc types.NamespacedName, portNames map[string]bool) []AdminAPI {
	seen := map[string]bool{}
	var out []AdminAPI
	for _, es := range slices {
		if es.AddressType != discoveryv1.AddressTypeIPv4 && es.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		for _, p := range es.Ports {
			if p.Name == nil || !portNames[*p.Name] || p.Port == nil {
				continue
			}
			for _, e := range es.Endpoints {
				if e.Conditions.Terminating != nil && *e.Conditions.Terminating {
					continue
				}
				if e.TargetRef == nil || e.TargetRef.Kind != "Pod" || len(e.Addresses) == 0 {
					continue
				}
				host := e.Addresses[0]
				if es.AddressType == discoveryv1.AddressTypeIPv6 {
					host = "[" + host + "]"
				}
				url := fmt.Sprintf("https://%s:%d", host, *p.Port)
				if seen[url] {
					continue
				}
				seen[url] = true
				ns := e.TargetRef.Namespace
				if ns == "" {
					ns = es.Namespace
				}
				out = append(out, AdminAPI{URL: url, ServerName: ServerName(svc), Pod: types.NamespacedName{Namespace: ns, Name: e.TargetRef.Name}})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URL < out[j].URL })
	return out
}
