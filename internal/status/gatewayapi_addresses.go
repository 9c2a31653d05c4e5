package status

import (
	"slices"
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// addressVerdict is what a Gateway's requested addresses (spec.addresses) come to against
// the addresses Kong is published at (its publish Service's, or --publish-status-address).
// konductor assigns no address: Kong listens where its Service is, so a requested address is
// usable only when Kong is already published there.
type addressVerdict struct {
	// addresses are the Gateway's status.addresses: every published address when it asks
	// none; else the usable requested ones, and for a requested type without a value the
	// published addresses of that type.
	addresses []string
	// unsupported names the requested types konductor cannot honour (Accepted False,
	// UnsupportedAddress): any but IPAddress and Hostname.
	unsupported []string
	// unusable are the requested values Kong is not published at (Programmed False,
	// AddressNotUsable).
	unusable []string
}

func judgeAddresses(requested []gatewayv1.GatewaySpecAddress, published []string) addressVerdict {
	if len(requested) == 0 {
		return addressVerdict{addresses: published}
	}
	var v addressVerdict
	for _, r := range requested {
		typ := gatewayv1.IPAddressType // the API's default
		if r.Type != nil {
			typ = *r.Type
		}
		if typ != gatewayv1.IPAddressType && typ != gatewayv1.HostnameAddressType {
			v.unsupported = append(v.unsupported, string(typ))
			continue
		}
		if r.Value == "" {
			for _, p := range published {
				if isIP(p) == (typ == gatewayv1.IPAddressType) {
					v.addresses = append(v.addresses, p)
				}
			}
			continue
		}
		if slices.ContainsFunc(published, func(p string) bool { return strings.EqualFold(p, r.Value) }) {
			v.addresses = append(v.addresses, r.Value)
		} else {
			v.unusable = append(v.unusable, r.Value)
		}
	}
	v.addresses = slices.Compact(sortAddresses(v.addresses))
	return v
}
