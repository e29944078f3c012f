package offline

import (
	"fmt"
	"io"
	"path/filepath"

	logstore "github.com/arbiterhq/arbiter/log/store"

	"github.com/hashicorp/raft"
)

// stores are the raft stores of a stopped node's data directory.
type stores struct {
	Log      raft.LogStore
	Stable   raft.StableStore
	Snapshot raft.SnapshotStore
	Close    func() error
}

// HasState reports whether dataDir holds raft state (a log, a term or a
// snapshot). It creates nothing in a directory without a log store; opening
// an existing one fails after a second while another process has it.
func HasState(dataDir string) (bool, error) {
	if logs, err := logstore.HasLogFiles(dataDir); err != nil {
		return false, err
	} else if !logs {
		snaps, err := filepath.Glob(filepath.Join(dataDir, "snapshots", "*", "meta.json"))
		return len(snaps) > 0, err
	}
	s, err := logstore.Open(dataDir, logstore.Options{LogOutput: io.Discard})
	if err != nil {
		return false, fmt.Errorf("%w (is a node running on %s?)", err, dataDir)
	}
	defer s.Close()
	return raft.HasExistingState(s.Log, s.Stable, s.Snapshot)
}

// StoredConfiguration is the latest raft configuration in the stores, as
// raft would load it: the newest snapshot's, unless a configuration entry
// of the log after it replaced it.
func StoredConfiguration(snapshots raft.SnapshotStore, log raft.LogStore) (conf raft.Configuration, err error) {
	snaps, err := snapshots.List()
	if err != nil {
		return conf, fmt.Errorf("list snapshots: %w", err)
	}
	var after uint64
	if len(snaps) > 0 {
		conf, after = snaps[0].Configuration, snaps[0].Index
	}
	first, err := log.FirstIndex()
	if err != nil {
		return conf, err
	}
	last, err := log.LastIndex()
	if err != nil {
		return conf, err
	}
	for i := last; i >= max(first, after+1, 1); i-- {
		var l raft.Log
		if err := log.GetLog(i, &l); err != nil {
			return conf, fmt.Errorf("log entry %d: %w", i, err)
		}
		if l.Type == raft.LogConfiguration {
			return decodeConfiguration(l.Data)
		}
	}
	return conf, nil
}

// decodeConfiguration is raft.DecodeConfiguration, which panics on bytes
// it cannot decode, with the panic turned into an error.
func decodeConfiguration(b []byte) (c raft.Configuration, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("undecodable configuration entry: %v", r)
		}
	}()
	return raft.DecodeConfiguration(b), nil
}
