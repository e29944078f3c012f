package identity

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/arbiterhq/arbiter/internal/strictjson"
)

// File is what a principals file (`arbiter serve --principals`) holds:
// either a bare JSON array of PrincipalConfig (file_version 0), or an
// object {"file_version": N, "principals": [...]}. The file seeds the
// cluster's replicated principal table (package access) only when the
// cluster has none yet, or when FileVersion is above every file version
// the cluster took: raise it to replace a table an admin changed through
// the API.
type File struct {
	FileVersion uint64            `json:"file_version,omitempty"`
	Principals  []PrincipalConfig `json:"principals"`
}

// MaxFileVersion keeps file versions exact in every JSON client (2^53).
const MaxFileVersion = 1<<53 - 1

// LoadFile reads and validates a principals file (strict JSON: an
// unknown field or a duplicate key is an error) and returns it with the
// registry it makes.
func LoadFile(path string) (*File, *Registry, error) {
	var raw json.RawMessage
	if err := strictjson.DecodeFile(path, &raw); err != nil {
		return nil, nil, fmt.Errorf("identity: principals file %w", err)
	}
	var f File
	if trimmed := bytes.TrimLeft(raw, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '[' {
		if err := strictjson.Decode(raw, &f.Principals); err != nil {
			return nil, nil, fmt.Errorf("identity: principals file %s: %w", path, err)
		}
	} else if err := strictjson.Decode(raw, &f); err != nil {
		return nil, nil, fmt.Errorf("identity: principals file %s: %w", path, err)
	}
	if f.FileVersion > MaxFileVersion {
		return nil, nil, fmt.Errorf("identity: principals file %s: file_version %d is above %d", path, f.FileVersion, uint64(MaxFileVersion))
	}
	if f.Principals == nil {
		f.Principals = []PrincipalConfig{}
	}
	reg, err := NewRegistry(f.Principals)
	if err != nil {
		return nil, nil, err
	}
	return &f, reg, nil
}
