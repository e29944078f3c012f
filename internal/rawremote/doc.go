// Package rawremote is a raw client of a cluster: Remote proposes
// encoded log commands and runs fsm queries over a node's msgpack API
// (POST /v1/commands, /v1/queries; the wire is internal/rawwire), and
// implements domain.Conn, so that a domain package's own typed service
// (nodes.On, authority.NewClient, workitem.NewService, ...) runs against
// a cluster elsewhere exactly as over an embedded node.
//
// It is not for embedders: a program that runs no node uses package
// client (the public JSON API, which links no server). This package is
// what the repository itself needs that client does not give: the
// bench's binary path (arbiter bench --op create ...), clustertest's
// Remote and RemoteOf, and tests that run a domain service over the
// network. It was cluster.Remote.
package rawremote
