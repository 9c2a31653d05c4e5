// Package config turns command-line flags and CONTROLLER_* environment variables into a
// validated Config. Flag names follow the Kong Ingress Controller wherever the meaning is the
// same, so a KIC Deployment's arguments and environment carry over unchanged. A bad value
// fails at start with a message that names the flag.
package config
