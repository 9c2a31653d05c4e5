package integration

import (
	"context"
	"crypto/tls"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// echoServerTLS is the TLS the echo server of the Pod at host serves on port: the
// certificate of its TLS_SERVER_CERT Secret (the suite's tls-backend, signed by the CA of its
// tls-checks-ca-certificate ConfigMap), read when a connection is made; nil for plain HTTP.
// A Secret that cannot be read or parsed fails the handshake.
func echoServerTLS(host string, port int) *tls.Config {
	pod, ok := fakePods.pod(host)
	if !ok || pod.TLSSecret == "" || port != echoTLSPort {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var secret corev1.Secret
	err := admin.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: pod.TLSSecret}, &secret)
	var cert tls.Certificate
	if err == nil {
		cert, err = tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	}
	if err != nil {
		return &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return nil, err }}
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}
