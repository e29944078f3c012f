package cluster

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/arbiterhq/arbiter/cluster/memberrec"
	"github.com/arbiterhq/arbiter/cluster/transport"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	arblog "github.com/arbiterhq/arbiter/log"
	"github.com/hashicorp/raft"
)

// A Node is composed of parts with one job each (see doc.go). Each part
// embeds core (the wiring: config, logger, FSM, raft handle) and reaches
// the others only through the small interfaces below; Node.New wires
// them, and Node's public methods delegate to the part that does the job.

// raftHost runs raft: it opens the stores and the transport, starts raft,
// stamps and applies commands as the leader, confirms leadership for
// reads, sizes the log kept for followers, and stops it all (host.go,
// apply.go, clock.go, catchup.go, sole_voter.go).
type raftHost struct {
	*core
	transport      raft.Transport
	closeTransport func() error
	guard          *transport.Guard // raft's view of transport
	truncations    *truncationWatch // raft's view of the log store
	stores         *Stores
	logStore       string // the log store of the data directory (logstore.WAL, logstore.Bolt); "" for Config.Stores

	// clock turns this node's monotonic clock into FSM time stamps.
	clock fsmClock
	// trailingLogs is the TrailingLogs last set by sizeTrailingLogs (0:
	// the configured one), slowestRestore the slowest restore measured
	// here (float64 bits of bytes a second; 0: none). See catchup.go.
	trailingLogs     atomic.Uint64
	slowestRestore   atomic.Uint64
	snapshotRestores atomic.Uint64

	// readyTerm is the term in which this node, as leader, has committed
	// its first entry; linearizable reads are served only in that term.
	readyTerm atomic.Uint64
	// hurried is set while the node, the sole voter, waits for its own
	// election with shortened timeouts (hurrySoleVoter); hurryMu orders
	// shortening them and restoring them.
	hurried atomic.Bool
	hurryMu sync.Mutex
	// confirmer shares leadership confirmations among concurrent
	// linearizable reads (confirm.go).
	confirmer leaderConfirmer
}

// commands is the path of a command and of a read: the enabled-set gate,
// the leader (here, or the leader's API through the forwarder), the retry
// while nothing was applied (propose.go, read.go, forward.go,
// forward_batch.go).
type commands struct {
	*core
	host      applier
	forwarder *forwarder
}

// membership decides and follows who is a member: joins, removals,
// promotions, the data directory's record, the checks before raft
// starts, and a removed member's exit (membership.go, join.go,
// promote.go, removal.go, record.go, startcheck.go).
type membership struct {
	*core
	host   applier
	leader leaderRunner // runs a change on the leader (commands)
	caps   settler      // settles the enabled set after a change (leadership)
	exit   func(error)  // stops the node on its own (Node.exit)

	// memberMu makes the leader's membership changes one at a time.
	memberMu sync.Mutex
	// record is the data directory's record of this member (record.go).
	record memberrec.Box
	// moving is set while this node asks the leader to move it to new
	// addresses (Config.ChangeAddress).
	moving atomic.Bool
	// member is set once this node is known to have been a member of its
	// cluster (state at start, a bootstrap, a join, or seen in the
	// configuration); only a member can find itself removed.
	member atomic.Bool
}

// leadership is what this node does while it leads: the first entry of
// its term, ticks, the enabled command set, the cluster's name, member
// upkeep and promotions (leadership.go, capabilities.go).
type leadership struct {
	*core
	host    termHost
	members memberKeeper
}

// backups writes and restores whole states: Backup, Restore, and the seed
// of a new cluster from a backup (backup.go).
type backups struct {
	*core
	host   applier
	ticker ticker // the first entry after a restore (leadership)
	// restoring admits one restore at a time.
	restoring sync.Mutex
}

// httpAPI serves the HTTP API: the route table, authentication and access
// levels, the host's handlers, and the metrics listener (http.go,
// http_cluster.go, http_changes.go, auth.go, whoami.go; the backup and
// capabilities handlers sit with their parts' code).
type httpAPI struct {
	*core
	node apiNode     // the operations the handlers call
	host applier     // the leader's side of forwarded writes and reads
	dom  domain.Host // what domain routes are built on

	// principals is nil in open mode; SetPrincipals replaces it.
	principals atomic.Pointer[identity.Registry]
	mux        *http.ServeMux // the API: the host's routes and every domain's
	routeTable []RouteInfo
	httpSrv    *http.Server
	metricsSrv *http.Server // Config.MetricsAddr's, or nil
	metricsLn  net.Listener
	sem        chan struct{}
}

// applier is the raft host as the other parts use it: apply a command as
// the leader, and make a read linearizable.
type applier interface {
	applyLocal(ctx context.Context, cmd arblog.Command) (*fsm.Response, error)
	startApply(ctx context.Context, cmd arblog.Command) pendingApply
	finishApply(ctx context.Context, p pendingApply) (*fsm.Response, error)
	linearize(ctx context.Context) error
	caughtUp() (ok bool, applied, mark uint64, known bool)
}

// termHost is what the leader's term needs of the raft host.
type termHost interface {
	applier
	restoreTimeouts()
	// termReady marks the term in which this leader has committed its
	// first entry (0: none, after a change of leadership).
	termReady(term uint64)
}

// leaderRunner runs a call on the leader, here or through its API.
type leaderRunner interface {
	viaLeader(ctx context.Context, what string, onLeader func(context.Context) error, toLeader func(context.Context, string) error) error
}

// settler settles the enabled command set (the leader, after a member
// changes what it serves).
type settler interface {
	settleCapabilities(ctx context.Context) error
}

// ticker applies a tick.
type ticker interface {
	tick(ctx context.Context) (*fsm.Response, error)
}

// memberKeeper is what the leader's term needs of membership.
type memberKeeper interface {
	maintainMembers(ctx context.Context)
	promoteLoop(ctx context.Context)
	recordedClusterID() string
}

// apiNode is what the HTTP handlers call: the node's public operations.
type apiNode interface {
	fsm.Proposer
	fsm.Reader
	Join(ctx context.Context, req JoinRequest) error
	Remove(ctx context.Context, req RemoveRequest) error
	TransferLeadership(ctx context.Context, req TransferRequest) (*TransferResult, error)
	Status() Status
	Ready(require ...string) error
	Backup(ctx context.Context, w io.Writer) error
	RestoreWith(ctx context.Context, r io.Reader, opts fsm.RestoreOptions) (*RestoreResult, error)
}
