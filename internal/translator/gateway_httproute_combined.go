package translator

import (
	"crypto/sha256"
	"fmt"
	"sort"
	"strconv"
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Combined services (KIC's CombinedServicesFromDifferentHTTPRoutes gate, KIC 3.5's
// --combined-services-from-different-httproutes; Options.CombinedServicesFromDifferentHTTPRoutes).
// Read in KIC's subtranslator/httproute.go (TranslateHTTPRoutesToKongstateServices,
// groupRulesFromHTTPRoutesByKongServiceName, getKongServiceNameByBackendRefs,
// translateHTTPRouteRulesMetaToKongstateService, translateHTTPRouteRulesMetaToKongstateRoutes;
// the current copy in Kong/kong-operator ingress-controller/):
//
//   - every rule of every HTTPRoute is keyed by its backendRefs alone: the Kong service
//     httproute.<route ns>.svc.<backend>_<backend>..., each backend
//     <ns>.<name>[.<port>][.<weight>] (the namespace the route's when not given), sorted;
//     "httproute.<ns>.svc._" without backends; a name longer than 511 characters becomes
//     httproute.<ns>.svc.<first backend>_combined.<sha256 of the name, hex>. So rules of
//     different HTTPRoutes of one namespace with the same backends share one Kong service
//     (its ID from that name, its host and upstream of that name);
//   - the service is then made as without the gate (gateway_httproute_services.go: the rules in
//     getRuleKey order, the first one's backendRefs, every rule's timeout, the routes of its
//     rules), from the rules of several HTTPRoutes: a route never holds matches of two
//     HTTPRoutes, and the routes' protocols come from the listeners of all the service's
//     HTTPRoutes together (KIC computes them once per service).

// maxCombinedServiceName is KIC's maxKongServiceNameLength (512 - 1, Konnect's limit).
const maxCombinedServiceName = 511

// combinedServiceName is KIC's getKongServiceNameByBackendRefs: the Kong service of rules
// with backendRefs refs in HTTPRoutes of namespace ns.
func combinedServiceName(ns string, refs []gatewayv1.HTTPBackendRef) string {
	if len(refs) == 0 {
		return "httproute." + ns + ".svc._" // a host cannot end with "."
	}
	names := make([]string, 0, len(refs))
	for _, r := range refs {
		bns := ns
		if r.Namespace != nil {
			bns = string(*r.Namespace)
		}
		n := bns + "." + string(r.Name) // KIC ignores group and kind here
		if r.Port != nil {
			n += "." + strconv.Itoa(int(*r.Port))
		}
		if r.Weight != nil {
			n += "." + strconv.Itoa(int(*r.Weight))
		}
		names = append(names, n)
	}
	sort.Strings(names)
	name := "httproute." + ns + ".svc." + strings.Join(names, "_")
	if len(name) > maxCombinedServiceName {
		return fmt.Sprintf("httproute.%s.svc.%s_combined.%x", ns, names[0], sha256.Sum256([]byte(name)))
	}
	return name
}
