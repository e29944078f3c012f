package projection

import (
	"github.com/arbiterhq/arbiter/fsm"
	memdb "github.com/hashicorp/go-memdb"
)

// The operational tables of the spec (HookProjectionChannels,
// HookProjectionLeases) plus the targets they hang off, the last
// publication of each target and the module's configuration.
const (
	tableConfig       = "projection_config"
	tableTargets      = "projection_targets"
	tableChannels     = "projection_channels"
	tableLeases       = "projection_leases"
	tablePublications = "projection_publications"
)

// configID is the key of the one configuration row.
const configID = "config"

// configRow is the replicated configuration. LeaseTTLMs 0 means "not
// configured": acquire then fails; there is no default.
type configRow struct {
	ID           string `msgpack:"id"`
	LeaseTTLMs   int64  `msgpack:"lease_ttl_ms"`
	UpdatedAtMs  int64  `msgpack:"updated_at_ms"`
	UpdatedIndex uint64 `msgpack:"updated_index"`
	// Targets counts the registered targets (bounded by MaxTargets).
	Targets uint64 `msgpack:"targets"`
}

// targetRow is an admitted target: its attested tuple and the producer
// bound to each admitted channel, sorted by channel.
type targetRow struct {
	TargetID    string           `msgpack:"target_id"`
	AgentID     string           `msgpack:"agent_id"`
	Attested    Attested         `msgpack:"attested"`
	Channels    []ChannelBinding `msgpack:"channels"`
	CreatedAtMs int64            `msgpack:"created_at_ms"`
}

// channelRow is HookProjectionChannels: the latest envelope a channel's
// producer submitted, as canonical JSON. It exists once a first envelope
// was accepted; Degraded marks a source conflict at SourceWatermark.
type channelRow struct {
	TargetID        string `msgpack:"target_id"`
	Channel         string `msgpack:"channel"`
	SourceWatermark uint64 `msgpack:"source_watermark"`
	Envelope        []byte `msgpack:"envelope"`
	CapturedAtMs    int64  `msgpack:"captured_at_ms"`
	ExpiresAtMs     int64  `msgpack:"expires_at_ms"`
	UpdatedAtMs     int64  `msgpack:"updated_at_ms"`
	Degraded        bool   `msgpack:"degraded"`
	Conflicts       uint64 `msgpack:"conflicts"`
}

// leaseRow is HookProjectionLeases: the target's last lease. Only the
// SHA-256 of the holder's token is kept; the token never enters the log
// or the state.
type leaseRow struct {
	TargetID             string `msgpack:"target_id"`
	FencingEpoch         uint64 `msgpack:"fencing_epoch"`
	HolderTokenSHA256    string `msgpack:"holder_token_sha256"`
	HolderInstanceDigest string `msgpack:"holder_instance_digest"`
	AcquiredAtMs         int64  `msgpack:"acquired_at_ms"`
	ExpiresAtMs          int64  `msgpack:"expires_at_ms"`
	State                string `msgpack:"state"` // held, released or published
	EndedAtMs            int64  `msgpack:"ended_at_ms"`
}

// publicationRow is a target's last publication: the bytes of
// current.json exactly as every node with a runtime root writes them.
type publicationRow struct {
	TargetID       string `msgpack:"target_id"`
	PublicationSeq uint64 `msgpack:"publication_seq"`
	FencingEpoch   uint64 `msgpack:"fencing_epoch"`
	PublishedAtMs  int64  `msgpack:"published_at_ms"`
	SHA256         string `msgpack:"sha256"`
	Bytes          []byte `msgpack:"bytes"`
}

func str(field string) memdb.Indexer { return &memdb.StringFieldIndex{Field: field} }

func tables() []fsm.Table {
	byTarget := func(name string) map[string]*memdb.IndexSchema {
		return map[string]*memdb.IndexSchema{"id": {Name: "id", Unique: true, Indexer: str("TargetID")}}
	}
	return []fsm.Table{
		{New: func() any { return new(configRow) }, Schema: &memdb.TableSchema{Name: tableConfig, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: str("ID")},
		}}},
		{New: func() any { return new(targetRow) }, Schema: &memdb.TableSchema{Name: tableTargets, Indexes: map[string]*memdb.IndexSchema{
			"id":    {Name: "id", Unique: true, Indexer: str("TargetID")},
			"agent": {Name: "agent", Unique: true, Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{str("AgentID"), str("TargetID")}}},
		}}},
		{New: func() any { return new(channelRow) }, Schema: &memdb.TableSchema{Name: tableChannels, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{str("TargetID"), str("Channel")}}},
		}}},
		{New: func() any { return new(leaseRow) }, Schema: &memdb.TableSchema{Name: tableLeases, Indexes: byTarget(tableLeases)}},
		{New: func() any { return new(publicationRow) }, Schema: &memdb.TableSchema{Name: tablePublications, Indexes: byTarget(tablePublications)}},
	}
}
