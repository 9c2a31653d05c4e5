// Package integration runs konductor against a real kube-apiserver and etcd (controller-runtime's
// envtest) and the Kong Admin API emulator on loopback.
//
// The binaries come from hack/envtest-assets.sh, which builds them from the Go module proxy and
// caches them outside the repository; KUBEBUILDER_ASSETS names their folder. Without them the
// suite fails rather than skips: a green run must mean these tests ran.
package integration
