package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	logstore "github.com/arbiterhq/arbiter/log/store"

	"github.com/arbiterhq/arbiter/access"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/spf13/cobra"
)

func (a *app) serveCommand() *cobra.Command {
	cfg := cluster.DefaultConfig()
	// The node's access control: --principals is its bootstrap file,
	// the cluster's replicated principal table (package access) wins
	// once it exists.
	guard := access.NewGuard()
	cfg.Domains = builtin.With(builtin.Options{Access: guard})
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "run a node",
		Long: `serve runs a node of a cluster until SIGTERM or SIGINT (a leader hands over
leadership first); SIGHUP reloads the principals file and each domain's
configuration.

--principals names the bootstrap file of access control. Principals are
replicated state: admins add, remove and rotate them while the cluster runs
(arbiter principal add|remove|rotate|list), and every node enforces the
cluster's table as soon as it applies a change. The file seeds that table
once a leader exists, only if the cluster has none yet or the file's
file_version is above every one it took; until the cluster holds a table a
node authenticates with its file. Each node logs which one is in force, and
WARNs when its file differs from the table. A node keeps a copy of the
table it last applied (hashes only) in --data-dir, access-table.json: at a
restart that copy is in force, not the file, until the node replays the
cluster's table.

With no flags at all it runs a single-node cluster in ./arbiter-data with raft
on 127.0.0.1:7000 and the API on 127.0.0.1:8000. Given any flag, a node whose
data directory is empty needs --bootstrap (a new cluster) or --join (an
existing one). A node whose data directory holds state resumes the membership
it records and refuses other --id, addresses (unless --change-address) or a
--join naming another cluster.`,
		Args: cobra.NoArgs,
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	fs.StringVar(&cfg.ID, "id", cfg.ID, "this node's unique id")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory for the raft log and snapshots")
	fs.StringVar(&cfg.RaftAddr, "raft-addr", cfg.RaftAddr, "host:port for raft traffic")
	fs.StringVar(&cfg.HTTPAddr, "http-addr", cfg.HTTPAddr, "host:port for the HTTP API")
	fs.StringVar(&cfg.MetricsAddr, "metrics-addr", "", "host:port of a listener serving only GET /metrics, without authentication or TLS (bind it where only the scraper reaches); the API then serves no /metrics. Unset, the API serves /metrics to any authenticated caller")
	fs.StringVar(&cfg.RaftAdvertise, "raft-advertise", "", "raft address peers dial, if not --raft-addr")
	fs.StringVar(&cfg.HTTPAdvertise, "http-advertise", "", "API address peers and clients use, if not --http-addr")
	bootstrap := fs.Bool("bootstrap", false, "start a new cluster with this node as its first voter (an empty --data-dir needs --bootstrap or --join; serve with no flags at all bootstraps a single node)")
	join := fs.String("join", "", "comma-separated API URLs of existing members to join through (a node with state only checks that they are of its cluster)")
	fs.BoolVar(&cfg.Replace, "replace", false, "with --join: take the id of a member gone for good (the leader removes it and adds this node as a non-voter)")
	fs.BoolVar(&cfg.ChangeAddress, "change-address", false, "start a node with state on a raft or API address other than the ones its data directory records; the leader moves the member there")
	fs.StringVar(&cfg.Restore, "restore", "", "with --bootstrap: seed the new cluster with this backup file (arbiter snapshot save)")
	fs.Uint64Var(&cfg.RestoreBumpIndex, "restore-bump-index", 0, "with --restore: start the log index this many entries past the backup's, at least as far as the backup's cluster went past it, so that no fence derived from the index is issued again")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logFormat := fs.String("log-format", "text", "text (key=value lines) or json (one object per line)")
	fs.BoolVar(&cfg.RaftPipeline, "raft-pipeline", cfg.RaftPipeline, "pipeline raft's AppendEntries to caught-up followers (send the next before the last is answered) instead of one at a time")
	noSync := fs.Bool("unsafe-no-fsync", false, "do not fsync the raft log (benchmarks only: a crash may lose acknowledged writes)")
	joinTimeout := fs.Duration("join-timeout", time.Minute, "how long to keep trying to join")
	gcPercent := fs.Int("gc-percent", defaultGCPercent, "Go's GC target, as GOGC (which wins when set): how far the heap grows past the live heap before a collection, in percent; higher spends less CPU on GC and holds more memory (cap it with --memory-limit)")
	memoryLimit := fs.String("memory-limit", "", "Go's soft memory limit, as GOMEMLIMIT (which wins when set): a whole number of bytes with an optional unit, B, KiB, MiB, GiB or TiB (4GiB), at least 16MiB; the collector runs more often as the heap nears it, whatever --gc-percent says. Empty or 0: no limit (Go's default). Set it below the machine's memory and well above the live heap")
	pprofAddr := fs.String("pprof-addr", "", "if set, serve Go's pprof profiles on this host:port (keep it private)")
	principalsFile := fs.String("principals", "", `JSON file of principals, [...] or {"file_version": N, "principals": [...]} (turns authentication on): seeds the cluster's replicated principal table when it has none or file_version is above the table's, and is in force only until then (reloaded on SIGHUP); without TLS, nodes also need --peer-token-file`)
	tlsCert := fs.String("tls-cert", "", "this node's certificate (PEM); with --tls-key and --tls-peer-ca, raft and the API use TLS (arbiter cert node makes one)")
	tlsKey := fs.String("tls-key", "", "this node's private key (PEM)")
	tlsPeerCA := fs.String("tls-peer-ca", "", "CA (PEM) that signs every node's certificate")
	tlsClientCA := fs.String("tls-client-ca", "", "CA (PEM) that signs client certificates (optional; never the peer CA: its certificates are nodes)")
	peerTokenFile := fs.String("peer-token-file", "", "file holding a secret of 16 characters or more shared by the nodes, instead of TLS (loopback only; needed with --principals and no TLS, even for one node)")
	fs.StringVar(&cfg.LogStore, "log-store", "", "raft log store of a new data directory: wal or bolt (default "+logstore.Default+"); an existing one keeps its own")
	fs.IntVar(&cfg.WALSegmentBytes, "wal-segment-bytes", 0, "size of a WAL segment file, preallocated when it is made (0: 64 MiB; 4 KiB to 1 GiB); compacted entries are freed a whole segment at a time")
	fs.Uint64Var(&cfg.SnapshotThreshold, "snapshot-threshold", cfg.SnapshotThreshold, "snapshot once the log holds this many entries past the last snapshot")
	fs.DurationVar(&cfg.SnapshotInterval, "snapshot-interval", cfg.SnapshotInterval, "how often raft checks --snapshot-threshold (a random wait between this and twice this; at least 5ms)")
	fs.Uint64Var(&cfg.TrailingLogs, "trailing-logs", cfg.TrailingLogs, "log entries kept behind a snapshot at least, so a follower that lags by fewer catches up without a snapshot install; more are kept while the write rate and the state's size call for it, so that a follower installing a snapshot finds the log after it")
	fs.Uint64Var(&cfg.MaxTrailingLogs, "max-trailing-logs", cfg.MaxTrailingLogs, "the most log entries kept behind a snapshot, however the write rate and the state's size call for more (bounds the log's disk)")
	fs.Int64Var(&cfg.MaxRestoreBytes, "max-restore-bytes", cfg.MaxRestoreBytes, "largest backup POST /v1/cluster/restore accepts")
	fs.DurationVar(&cfg.IdempotencyRetention, "idempotency-retention", cfg.IdempotencyRetention, "how long a keyed write's result is kept for replay")
	fs.Uint64Var(&cfg.IdempotencyMaxRows, "idempotency-max-rows", cfg.IdempotencyMaxRows, "most keyed results kept for replay; beyond it the oldest are evicted early")
	fs.Var(byteSize{"idempotency-max-bytes", &cfg.IdempotencyMaxBytes}, "idempotency-max-bytes", "most bytes of keyed results kept for replay, each counted as its key, scope, principal and result plus 160 (a whole number with an optional unit, B, KiB, MiB, GiB or TiB; 1MiB to 1TiB); beyond it the oldest are evicted early")
	fs.Uint64Var(&cfg.ChangeFeedRetain, "change-feed-retain", cfg.ChangeFeedRetain, "change-feed events kept")
	// Domains register Go flags (domain.Domain.Flags); pflag takes them
	// as they are.
	domainFlags := flag.NewFlagSet("serve", flag.ContinueOnError)
	for _, d := range cfg.Domains {
		if d.Flags != nil {
			d.Flags(domainFlags)
		}
	}
	fs.AddGoFlagSet(domainFlags)
	a.mcpFlag(fs, &cfg) // --mcp: the MCP endpoint at /mcp (mcp.go)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return serve(cfg, serveOptions{
			noFlags: cmd.Flags().NFlag() == 0, bootstrap: *bootstrap, join: *join, logLevel: *logLevel, logFormat: *logFormat,
			noSync: *noSync, joinTimeout: *joinTimeout, pprofAddr: *pprofAddr, principalsFile: *principalsFile,
			tlsCert: *tlsCert, tlsKey: *tlsKey, tlsPeerCA: *tlsPeerCA, tlsClientCA: *tlsClientCA, peerTokenFile: *peerTokenFile,
			gcPercent: *gcPercent, gogc: a.getenv("GOGC"), memoryLimit: *memoryLimit, gomemlimit: a.getenv("GOMEMLIMIT"),
			stderr: a.stderr, guard: guard,
		})
	}
	return cmd
}

// serveOptions are serve's flags that are not Config fields.
type serveOptions struct {
	noFlags, bootstrap, noSync                             bool
	join, logLevel, logFormat, pprofAddr, principalsFile   string
	tlsCert, tlsKey, tlsPeerCA, tlsClientCA, peerTokenFile string
	joinTimeout                                            time.Duration
	gcPercent                                              int
	gogc                                                   string // the GOGC environment variable
	memoryLimit                                            string // --memory-limit, unparsed
	gomemlimit                                             string // the GOMEMLIMIT environment variable
	stderr                                                 io.Writer
	guard                                                  *access.Guard // the node's access control (cfg.Domains holds its domain)
}

// defaultGCPercent is serve's GC target. Go's own, 100, let the three
// members of a loaded cluster spend about a sixth of their CPU marking;
// at 200 a create cost 0.89x the server CPU and a cluster took 1.09x the
// creates a second (BENCHMARKS.md, "GC target"), for a heap that may grow
// to three times the live one instead of two, unless GOMEMLIMIT caps it.
const defaultGCPercent = 200

// setGCPercent sets the GC target to percent, unless GOGC is set: the
// runtime has read that already, and an operator's explicit choice wins.
func setGCPercent(percent int, gogc string) {
	if gogc == "" {
		debug.SetGCPercent(percent)
	}
}

// minMemoryLimit is the smallest --memory-limit serve takes. A node's
// runtime alone holds more than this, so a smaller limit would keep the
// collector running without pause; it is far more likely a forgotten
// unit ("4" for "4GiB") than a choice.
const minMemoryLimit = 16 << 20

// parseMemoryLimit reads --memory-limit in GOMEMLIMIT's syntax: a whole
// number of bytes with an optional unit. Empty or 0 is 0: no limit.
func parseMemoryLimit(s string) (int64, error) {
	if s == "" || s == "0" {
		return 0, nil
	}
	n, err := parseBytes("--memory-limit", s)
	if err != nil || n == 0 { // 0 in any unit: no limit, as "0"
		return 0, err
	}
	if n < minMemoryLimit {
		return 0, usageErrorf("--memory-limit %q is under 16MiB (a missing unit? 4GiB, not 4)", s)
	}
	return n, nil
}

// setMemoryLimit sets Go's soft memory limit to limit bytes, unless
// limit is 0 (Go's default, no limit, stays) or GOMEMLIMIT is set: the
// runtime has read that already, and the environment wins as GOGC does
// over --gc-percent. Both set is logged, since the flag then does nothing.
func setMemoryLimit(limit int64, gomemlimit string, logger *slog.Logger) {
	switch {
	case limit == 0:
	case gomemlimit != "":
		logger.Warn("GOMEMLIMIT is set: it wins, --memory-limit is ignored", "GOMEMLIMIT", gomemlimit, "memory_limit_bytes", limit)
	default:
		debug.SetMemoryLimit(limit)
	}
}

func serve(cfg cluster.Config, o serveOptions) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger, err := cluster.NewLogger(o.stderr, o.logFormat, level)
	if err != nil {
		return fmt.Errorf("--log-format: %w", err)
	}
	cfg.Logger = logger
	if o.gcPercent < 1 {
		return usageErrorf("--gc-percent must be 1 or more (GOGC=off turns the collector off)")
	}
	memoryLimit, err := parseMemoryLimit(o.memoryLimit)
	if err != nil {
		return err
	}
	setGCPercent(o.gcPercent, o.gogc)
	setMemoryLimit(memoryLimit, o.gomemlimit, cfg.Logger)
	cfg.NoSyncUnsafe = o.noSync
	cfg.FlagNames = serveFlagNames
	if o.join != "" {
		if o.bootstrap {
			return usageErrorf("--bootstrap and --join are exclusive")
		}
		cfg.Join = strings.Split(o.join, ",")
	}
	// Bootstrapping only happens on an empty data directory, and only
	// when asked for: a forgotten --join must not make a second cluster.
	// With no flags at all, serve is the README's single-node default.
	cfg.Bootstrap = o.bootstrap || o.noFlags

	// The guard keeps a copy of the table the node last applied in the
	// data directory: at a restart it is in force, not the file, until
	// the node replays the cluster's table.
	if err := o.guard.SetCacheFile(filepath.Join(cfg.DataDir, access.CacheFileName)); err != nil {
		return err
	}
	if o.principalsFile != "" {
		// What the node authenticates with until the cluster holds a
		// principal table (the guard then gives it the table's): the
		// copy's registry if there is one, else the file's.
		if _, err := o.guard.LoadFile(o.principalsFile); err != nil {
			return err
		}
		cfg.Principals = o.guard.Registry()
	}
	if o.tlsCert != "" || o.tlsKey != "" || o.tlsPeerCA != "" {
		t, err := cluster.LoadTLS(o.tlsCert, o.tlsKey, o.tlsPeerCA, o.tlsClientCA)
		if err != nil {
			return err
		}
		cfg.TLS = t
	}
	if o.peerTokenFile != "" {
		raw, err := os.ReadFile(o.peerTokenFile)
		if err != nil {
			return fmt.Errorf("--peer-token-file: %w", err)
		}
		cfg.PeerToken = strings.TrimSpace(string(raw))
	}
	for _, d := range cfg.Domains {
		if d.Load != nil {
			if err := d.Load(); err != nil {
				return fmt.Errorf("domain %s: %w", d.Name, err)
			}
		}
	}
	if o.pprofAddr != "" {
		if err := servePprof(o.pprofAddr, cfg.Logger); err != nil {
			return err
		}
	}
	node, err := cluster.New(cfg)
	if err != nil {
		return err
	}
	// Signals are caught before Start: a join may take up to
	// --join-timeout, and SIGTERM meanwhile must end the start cleanly
	// rather than kill the process half-started.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if stopped, err := startNode(node, o.joinTimeout, sig, cfg.Logger); err != nil || stopped {
		return err
	}
	cfg.Logger.Info("serving", "id", cfg.ID, "api", node.APIAddr(), "raft", node.RaftAddr(), "auth", node.AuthMode(), "tls", cfg.TLS != nil)

	for stop := false; !stop; {
		select {
		case s := <-sig:
			if s != syscall.SIGHUP {
				cfg.Logger.Info("shutting down", "signal", s.String())
				stop = true
				break
			}
			reload(o.guard, cfg, o.principalsFile)
		case <-node.Done():
			// The node stopped on its own: it was removed from its
			// cluster. It has said why in its log; exit non-zero.
			if err := node.Err(); err != nil {
				return err
			}
			return errors.New("the node stopped")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return node.Shutdown(ctx)
}

// startNode starts node within timeout. A SIGTERM or SIGINT on sig
// meanwhile cancels the start; stopped then reports that the node has
// been shut down and the process should exit without error. A SIGHUP
// during the start is ignored: the principals file was just read.
func startNode(node *cluster.Node, timeout time.Duration, sig <-chan os.Signal, logger *slog.Logger) (stopped bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- node.Start(ctx) }()
	for {
		select {
		case err := <-done:
			return false, err
		case s := <-sig:
			if s == syscall.SIGHUP {
				continue
			}
			logger.Info("shutting down during start", "signal", s.String())
			cancel()
			if err := <-done; err == nil {
				// Started after all: shut down as on any other signal.
				sctx, scancel := context.WithTimeout(context.Background(), 15*time.Second)
				defer scancel()
				return true, node.Shutdown(sctx)
			}
			return true, nil
		}
	}
}

// servePprof serves net/http/pprof on its own listener, never on the API.
func servePprof(addr string, logger *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--pprof-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil {
			logger.Warn("pprof server stopped", "error", err)
		}
	}()
	logger.Info("serving pprof", "addr", ln.Addr().String())
	return nil
}

// reload re-reads on SIGHUP what the flags named: the principals file and
// every domain's configuration. What fails to load keeps its previous
// value. The principals file is proposed again as a seed; it is in force
// only while the cluster holds no principal table (the guard decides and
// logs which).
func reload(guard *access.Guard, cfg cluster.Config, principalsFile string) {
	if principalsFile != "" {
		if _, err := guard.LoadFile(principalsFile); err != nil {
			cfg.Logger.Error("reloading principals failed; keeping the previous ones", "error", err)
		}
	}
	for _, d := range cfg.Domains {
		if d.Load == nil {
			continue
		}
		if err := d.Load(); err != nil {
			cfg.Logger.Error("reloading a domain's configuration failed; keeping the previous one", "domain", d.Name, "error", err)
		} else {
			cfg.Logger.Info("reloaded a domain's configuration", "domain", d.Name)
		}
	}
}

// serveFlagNames names Config fields by the flags that set them, for the
// messages of Config.Validate and Node.Start.
var serveFlagNames = map[string]string{
	"ID":                   "--id",
	"DataDir":              "--data-dir",
	"RaftAddr":             "--raft-addr",
	"HTTPAddr":             "--http-addr",
	"MetricsAddr":          "--metrics-addr",
	"RaftAdvertise":        "--raft-advertise",
	"HTTPAdvertise":        "--http-advertise",
	"Bootstrap":            "--bootstrap",
	"Join":                 "--join",
	"Replace":              "--replace",
	"ChangeAddress":        "--change-address",
	"Restore":              "--restore",
	"RestoreBumpIndex":     "--restore-bump-index",
	"Principals":           "--principals",
	"PeerToken":            "--peer-token-file",
	"SnapshotThreshold":    "--snapshot-threshold",
	"SnapshotInterval":     "--snapshot-interval",
	"MaxRestoreBytes":      "--max-restore-bytes",
	"IdempotencyRetention": "--idempotency-retention",
	"IdempotencyMaxRows":   "--idempotency-max-rows",
	"IdempotencyMaxBytes":  "--idempotency-max-bytes",
	"ChangeFeedRetain":     "--change-feed-retain",
	"TrailingLogs":         "--trailing-logs",
	"MaxTrailingLogs":      "--max-trailing-logs",
	"LogStore":             "--log-store",
	"WALSegmentBytes":      "--wal-segment-bytes",
	"Logger":               "--log-level/--log-format",
	"NoSyncUnsafe":         "--unsafe-no-fsync",
}
