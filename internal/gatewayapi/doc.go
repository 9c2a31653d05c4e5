// Package gatewayapi decides which Gateway API objects are this controller's and how routes
// attach to Gateways: GatewayClasses by controllerName, Gateways by class, routes by their
// parentRefs (sectionName, port), each listener's allowedRoutes (namespaces, kinds) and
// hostname intersection. It is pure: the translator uses it to pick what to translate, and
// the status writer uses the same answer for conditions and attachedRoutes, so the two never
// disagree.
package gatewayapi
