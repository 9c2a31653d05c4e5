// Package objgraph is the object graph (docs/architecture.md, "Growing the translator"):
// every reference one translation followed from a Kubernetes object to another, and the
// values several objects share (SharedValue), as edges between nodes keyed by group, kind,
// namespace and name.
//
// The translator records it (Graph.Refer, as it reads); the rest of the controller asks it
// questions: which objects a change can affect (Dependents: relevance of events, the
// admission webhook's scope, the incremental translator's closure), which objects must go
// when one is refused (Broken: the fallback configuration, the database-backed isolation,
// fail-closed plugins), who refers to a Secret (which payloads to load).
//
// A graph is never modified once its translation is done, so it is shared between rounds
// and readers without locks. An incremental round's graph is a layer over the previous one
// (ReplaceEdgesFrom): it holds only the edges of the objects translated again, and chains of
// layers are merged past MaxDepth (Squash). Its sets of edges (Set, a SmallSet of nodes) hold
// their first member inline, since most nodes have one or two edges and the graph is much of
// the controller's memory between rounds at 10,000 Ingresses.
package objgraph
