// Package identity says who is calling: the Principal a command runs as
// (its id, tenants and roles, stamped into every log.Command) and the
// Registry that maps credentials to principals. Every module takes the
// principal from the context (set by the HTTP layer from the verified
// credential, or by an embedding host), and the leader stamps it into
// every command, so no module invents its own identity and no request
// body can claim one.
//
// Principals come from the deployment (Go config, or a JSON file for
// `arbiter serve --principals`: File, a bare array or an object with a
// file_version), with tokens stored only as SHA-256 hashes (`arbiter
// principal hash-token`), and client certificates identified by the
// SHA-256 of their DER encoding. A Registry can be replaced while the
// node runs (Node.SetPrincipals). The cluster replicates its principals
// as a table (package access), which the file only seeds; each node's
// access.Guard hands the node the registry in force after every change.
//
// Roles: admin (membership, snapshots, the raw node API), controller
// (capacity cells, policies), member (normal operations), reader (reads).
// Each role includes the ones after it.
package identity
