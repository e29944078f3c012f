package access

import (
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/statestore"
	"github.com/arbiterhq/arbiter/log"
	memdb "github.com/hashicorp/go-memdb"
)

// Name is the domain's name.
const Name = "access"

// Command and query types, inside the range 600-699 the module declares.
const (
	// CmdPut adds a principal, or replaces one (Replace).
	CmdPut log.Type = 600
	// CmdRemove removes a principal: its credentials are refused on a
	// node as soon as that node applies the entry.
	CmdRemove log.Type = 601
	// CmdRotate replaces a principal's token hashes.
	CmdRotate log.Type = 602
	// CmdSeed replaces the whole table with a node's --principals file,
	// when the cluster has none yet or the file's version is newer.
	CmdSeed log.Type = 603

	// QueryList lists the table (without hashes).
	QueryList fsm.QueryType = 600
)

// Bounds of the table, checked by the service and again inside Apply.
const (
	// MaxPrincipals bounds the table (a list, a seed and the registry a
	// node rebuilds after each change are all of this size at most).
	MaxPrincipals = 1000
	// MaxCredentials bounds one principal's token and certificate
	// hashes together (a rotation that keeps old tokens a while needs a
	// few, not many).
	MaxCredentials = 16
	// MaxTenants bounds one principal's tenants.
	MaxTenants = 64
)

const (
	tablePrincipals = "access_principals"
	tableSource     = "access_source"
	sourceRowID     = "principals"
)

// Sources of the table and of a row.
const (
	SourceFile  = "file"  // a node's --principals file (CmdSeed)
	SourceAdmin = "admin" // the API
)

// principalRow is one principal. Hashes only, lower-case hex, sorted.
type principalRow struct {
	ID          string   `msgpack:"id"`
	Tenants     []string `msgpack:"tenants"`
	Roles       []string `msgpack:"roles"`
	TokenSHA256 []string `msgpack:"token_sha256,omitempty"`
	CertSHA256  []string `msgpack:"cert_sha256,omitempty"`
	Source      string   `msgpack:"source"`
	SetIndex    uint64   `msgpack:"set_index"`
	SetAtMs     int64    `msgpack:"set_at_ms"`
}

// sourceRow says the cluster holds a table (its existence), where its
// last change came from, and the newest file version it took (kept by
// changes through the API, so a file only wins with a higher one).
type sourceRow struct {
	ID          string `msgpack:"id"`
	Source      string `msgpack:"source"`
	FileVersion uint64 `msgpack:"file_version"`
	Index       uint64 `msgpack:"index"`
	AtMs        int64  `msgpack:"at_ms"`
}

// module is the FSM module; g receives the registry every change
// makes (nil: a module that only keeps the table, as in a bare FSM).
func module(g *Guard) fsm.Module {
	return fsm.Module{
		Name:  Name,
		Types: fsm.TypeRange{First: 600, Last: 699},
		Tables: []fsm.Table{
			{New: func() any { return new(principalRow) }, Schema: &memdb.TableSchema{
				Name: tablePrincipals,
				Indexes: map[string]*memdb.IndexSchema{
					"id": {Name: "id", Unique: true, Indexer: statestore.StringField("ID", func(r *principalRow) string { return r.ID })},
				},
			}},
			{New: func() any { return new(sourceRow) }, Schema: &memdb.TableSchema{
				Name: tableSource,
				Indexes: map[string]*memdb.IndexSchema{
					"id": {Name: "id", Unique: true, Indexer: statestore.StringField("ID", func(r *sourceRow) string { return r.ID })},
				},
			}},
		},
		Commands: []fsm.CommandSpec{
			// principal_put 2: every command's principal checked in Apply
			// (authorize.go).
			{Type: CmdPut, Name: "principal_put", MaxVersion: 2, Apply: fsm.Handle(fsm.Typed[putCmd]{Access: changeAccess[putCmd], Apply: g.applyPut})},
			{Type: CmdRemove, Name: "principal_remove", MaxVersion: 1, Apply: fsm.Handle(fsm.Typed[removeCmd]{Access: changeAccess[removeCmd], Apply: g.applyRemove})},
			{Type: CmdRotate, Name: "principal_rotate", MaxVersion: 1, Apply: fsm.Handle(fsm.Typed[rotateCmd]{Access: changeAccess[rotateCmd], Apply: g.applyRotate})},
			{Type: CmdSeed, Name: "principals_seed", MaxVersion: 1, Apply: fsm.Handle(fsm.Typed[seedCmd]{Access: changeAccess[seedCmd], Apply: g.applySeed})},
		},
		Queries: []fsm.QuerySpec{
			{Type: QueryList, Name: "principals", Run: runList},
		},
		Restored:      g.restored,
		Authorize:     authorize,
		AuthorizeRead: authorizeRead,
	}
}

// Module is the module without a node to keep informed: the table only
// (for a bare FSM; a node runs Guard.Domain's).
func Module() fsm.Module { return module(nil) }
