package cluster

import "github.com/arbiterhq/arbiter/cluster/transport"

// TLSConfig turns on TLS for everything a node serves and dials: the raft
// transport, the HTTP API, forwarding and joins (transport.TLSConfig).
type TLSConfig = transport.TLSConfig

// LoadTLS reads PEM files into a TLSConfig; clientCAFile may be empty.
func LoadTLS(certFile, keyFile, peerCAFile, clientCAFile string) (*TLSConfig, error) {
	return transport.LoadTLS(certFile, keyFile, peerCAFile, clientCAFile)
}
