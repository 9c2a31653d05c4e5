package status

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func specAddress(typ, value string) gatewayv1.GatewaySpecAddress {
	a := gatewayv1.GatewaySpecAddress{Value: value}
	if typ != "" {
		t := gatewayv1.AddressType(typ)
		a.Type = &t
	}
	return a
}

// A Gateway's requested addresses (spec.addresses) against the addresses Kong's publish
// Service (or --publish-status-address) gives: a type konductor cannot honour is
// Accepted False UnsupportedAddress; a value Kong is not published at is Programmed False
// AddressNotUsable; status.addresses lists the usable requested ones (and, for a requested
// type without a value, the published addresses of that type).
func TestGatewayStatusRequestedAddresses(t *testing.T) {
	published := []string{"192.0.2.20", "198.51.100.1", "kong.example.com"}
	cases := []struct {
		name                 string
		requested            []gatewayv1.GatewaySpecAddress
		accepted, programmed string
		message              string // in the failing condition's message
		addresses            []string
	}{
		{name: "none asked: every published address",
			accepted: "True/Accepted", programmed: "True/Programmed", addresses: published},
		{name: "a published IP", requested: []gatewayv1.GatewaySpecAddress{specAddress("IPAddress", "192.0.2.20")},
			accepted: "True/Accepted", programmed: "True/Programmed", addresses: []string{"192.0.2.20"}},
		{name: "type defaults to IPAddress", requested: []gatewayv1.GatewaySpecAddress{specAddress("", "198.51.100.1")},
			accepted: "True/Accepted", programmed: "True/Programmed", addresses: []string{"198.51.100.1"}},
		{name: "a published hostname", requested: []gatewayv1.GatewaySpecAddress{specAddress("Hostname", "kong.example.com")},
			accepted: "True/Accepted", programmed: "True/Programmed", addresses: []string{"kong.example.com"}},
		{name: "an IP Kong is not published at",
			requested: []gatewayv1.GatewaySpecAddress{specAddress("IPAddress", "203.0.113.9"), specAddress("IPAddress", "192.0.2.20")},
			accepted:  "True/Accepted", programmed: "False/AddressNotUsable", message: "203.0.113.9", addresses: []string{"192.0.2.20"}},
		{name: "a type konductor does not know",
			requested: []gatewayv1.GatewaySpecAddress{specAddress("test/fake-invalid-type", "x"), specAddress("IPAddress", "192.0.2.20")},
			accepted:  "False/UnsupportedAddress", programmed: "True/Programmed", message: "test/fake-invalid-type", addresses: []string{"192.0.2.20"}},
		{name: "NamedAddress is not a Kong publish address",
			requested: []gatewayv1.GatewaySpecAddress{specAddress("NamedAddress", "pool-a")},
			accepted:  "False/UnsupportedAddress", programmed: "True/Programmed", message: "NamedAddress"},
		{name: "a type without a value: the published addresses of the type",
			requested: []gatewayv1.GatewaySpecAddress{specAddress("IPAddress", "")},
			accepted:  "True/Accepted", programmed: "True/Programmed", addresses: []string{"192.0.2.20", "198.51.100.1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gw := testGateway(listener("http", gatewayv1.HTTPProtocolType, 80, ""))
			gw.Spec.Addresses = c.requested
			got := gatewayStatus(gatewayv1.GatewayStatus{}, attach(gw).Gateways[0], nil, published, nil, "", true, t0)
			require.Equal(t, c.accepted, condition(got.Conditions, "Accepted"))
			require.Equal(t, c.programmed, condition(got.Conditions, "Programmed"))
			if c.message != "" {
				failing := "Accepted"
				if c.accepted == "True/Accepted" {
					failing = "Programmed"
				}
				require.Contains(t, meta.FindStatusCondition(got.Conditions, failing).Message, c.message)
			}
			var values []string
			for _, a := range got.Addresses {
				values = append(values, a.Value)
				if a.Value == "kong.example.com" {
					require.Equal(t, gatewayv1.HostnameAddressType, *a.Type)
				} else {
					require.Equal(t, gatewayv1.IPAddressType, *a.Type)
				}
			}
			require.Equal(t, c.addresses, values)
		})
	}
}
