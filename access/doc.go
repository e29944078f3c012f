// Package access is online access control: the cluster's principals, with
// their tenants, roles and credential hashes, as replicated state that
// admins manage while the cluster runs (`arbiter principal
// add|remove|rotate|list`, /v1/principals), in force on every node as
// soon as that node applies the commit, without SIGHUP. It registers like
// a domain (Guard.Domain), so package cluster imports it not.
//
// The table stores hashes only: token_sha256 (the hex SHA-256 of a bearer
// token, identity.HashToken) and cert_sha256 (of a client certificate's
// DER). The token itself never reaches a node: `arbiter principal add`
// and `rotate` make a random token on the client, print it once and send
// only its hash; the API takes only hashes. So no log entry, snapshot or
// backup holds a token.
//
// A node's --principals file (identity.File) is the bootstrap source. It
// is what the node authenticates with until the cluster holds a table,
// and it seeds the table once a leader exists and the cluster enables
// this module: only when the cluster has no table yet, or when the file's
// file_version is above every file version the cluster took. A change
// through the API is therefore never undone by a restart with the same
// file. Once the cluster holds a table, the table is in force on every
// node and the file is not; each node logs which one won, and WARNs when
// its file differs from the table.
//
// A restart keeps the table the node last applied: the guard keeps a copy
// of it (hashes only) with the FSM applied index it was installed at
// (Guard.SetCacheFile; arbiter serve: <data-dir>/access-table.json). At
// start the copy is in force, not the file (logged at INFO), until the
// node has replayed up to that index: a table from an older applied state
// (the snapshot a restart loads) does not replace it, so a node that
// restarts without a leader, unable to replay, never accepts a token the
// cluster revoked. A cluster restore's applied index is above every one
// before it, so a restore replaces the copy. The copy is removed when the
// cluster's table is gone as of an index at or above the copy's.
//
// Every command meets the table again inside Apply, as of its own log
// position (authorize.go, from principal_put 2): a node authenticates
// with the table it has applied, and one that lags would otherwise
// still act for a principal the log has removed or cut. A linearizable
// read meets the table the same way on the leader, with the credential
// that authenticated it (authorizeRead, identity.Principal.Cred, which
// the log never holds); the leader holds a forwarded command's credential
// against the registry the table makes before it proposes it (tables
// made here are identity.Registry.AsTable). A rotated token so stops
// acting through a lagging node too. A stale read is answered as the
// node stands.
//
// Every change needs an admin of every tenant (tenants ["*"]), checked
// inside Apply. A change through the API must leave at least one such
// admin with a credential in the table (it would lock every operator
// out), and is refused while the cluster holds no table (the file would
// silently stop counting).
//
// Commands take 600-699 (fsm/doc.go).
package access
