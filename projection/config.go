package projection

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/strictjson"
	"github.com/arbiterhq/arbiter/log"
)

// setConfigCmd is the payload of CmdSetConfig.
type setConfigCmd struct {
	LeaseTTLMs int64 `msgpack:"lease_ttl_ms"`
}

// applySetConfig sets lease_ttl_ms (admin only). Setting the value it
// already has changes nothing.
func applySetConfig(tx *fsm.Tx, _ *log.Command, c *setConfigCmd) (any, error) {
	cur, err := getConfig(tx)
	if err != nil {
		return nil, err
	}
	if cur.LeaseTTLMs == c.LeaseTTLMs {
		return cur.view(false), nil
	}
	n := *cur
	n.LeaseTTLMs, n.UpdatedAtMs, n.UpdatedIndex = c.LeaseTTLMs, tx.Now, tx.Index
	if err := tx.Insert(tableConfig, &n); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "store config: %v", err)
	}
	tx.Emit("projection_config", configID, "")
	return n.view(true), nil
}

func (c *configRow) view(changed bool) *Config {
	return &Config{LeaseTTLMs: c.LeaseTTLMs, Configured: c.LeaseTTLMs > 0, UpdatedAtMs: c.UpdatedAtMs, Changed: changed}
}

// getConfig is the configuration row, or an empty one (nothing
// configured, no targets) before the first write.
func getConfig(s fsm.Store) (*configRow, error) {
	raw, err := s.First(tableConfig, "id", configID)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "read config: %v", err)
	}
	if raw == nil {
		return &configRow{ID: configID}, nil
	}
	return raw.(*configRow), nil
}

func runConfig(rt *fsm.ReadTx, payload []byte) (any, error) {
	var q struct{}
	if err := fsm.DecodePayload(payload, &q); err != nil {
		return nil, err
	}
	c, err := getConfig(rt.Txn)
	if err != nil {
		return nil, err
	}
	return c.view(false), nil
}

// LoadConfigFile reads a --projection-config file: one JSON object
// {"lease_ttl_ms": N}, nothing else. A file without lease_ttl_ms is an
// error: there is no default.
func LoadConfigFile(path string) (*ConfigRequest, error) {
	var raw struct {
		LeaseTTLMs *int64 `json:"lease_ttl_ms"`
	}
	if err := strictjson.DecodeFile(path, &raw); err != nil {
		return nil, err
	}
	if raw.LeaseTTLMs == nil {
		return nil, errs.Errorf(errs.CodeInvalid, "%s: lease_ttl_ms is required (there is no default)", path)
	}
	if err := checkLeaseTTL(*raw.LeaseTTLMs); err != nil {
		return nil, errs.Errorf(errs.CodeInvalid, "%s: %v", path, err)
	}
	return &ConfigRequest{LeaseTTLMs: *raw.LeaseTTLMs}, nil
}
