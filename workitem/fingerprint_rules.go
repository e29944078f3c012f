package workitem

import (
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/workitem/extension"
)

// fingerprintRules is the rule of canonical JSON a record's fingerprint
// may follow inside Apply: RFC 8785 (or the old rule) once the cluster
// has enabled version 3 of submit, which every member then serves; the
// old rule alone before, so that replicas of an older binary and the
// replay of an older log decide exactly as they did.
func fingerprintRules(tx *fsm.Tx) extension.Rules {
	if tx.EnabledVersion(CmdSubmit) >= 3 {
		return extension.RFC8785OrLegacy
	}
	return extension.LegacyOnly
}
