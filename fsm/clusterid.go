package fsm

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/arbiterhq/arbiter/log"
)

// CmdClusterID names the cluster, once. The id is chosen (at random) by
// the node that proposes it, never inside Apply; the first one applied
// stays for the life of the cluster and travels in every snapshot. A
// backup restored into a cluster keeps the cluster's own id (see
// PrepareRestore), so a cluster seeded from another's backup is another
// cluster.
const CmdClusterID log.Type = 5

// ClusterIDCommand is CmdClusterID's payload.
type ClusterIDCommand struct {
	ID string `msgpack:"id"`
}

// MaxClusterIDBytes bounds a cluster id.
const MaxClusterIDBytes = 64

func clusterIDSpec() CommandSpec {
	return CommandSpec{Type: CmdClusterID, Name: "cluster_id", MaxVersion: 1, Internal: true,
		Apply: func(tx *Tx, cmd *log.Command) (any, error) {
			var c ClusterIDCommand
			if err := decodePayload(cmd.Payload, &c); err != nil {
				return nil, err
			}
			if err := bounds.Identifier("cluster id", c.ID); err != nil {
				return nil, err
			}
			if len(c.ID) > MaxClusterIDBytes {
				return nil, errs.Errorf(errs.CodeInvalid, "cluster id: more than %d bytes", MaxClusterIDBytes)
			}
			switch have := tx.meta.ClusterID; {
			case have == c.ID:
				return c, nil
			case have != "":
				return nil, errs.Errorf(errs.CodeConflict, "the cluster is already named %s", have)
			}
			tx.meta.ClusterID = c.ID
			tx.wrote = true // the meta row carries the id
			tx.Emit("cluster_id", c.ID, "")
			return c, nil
		}}
}

// ClusterID is the cluster's id as the local state holds it; "" until
// the first CmdClusterID is applied here.
func (f *FSM) ClusterID() string {
	return readMeta(f.db.Load().Txn(false)).ClusterID
}
