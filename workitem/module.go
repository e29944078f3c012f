package workitem

import (
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
)

// Command and query types, inside the range 300-399 the module declares
// (Module: fsm.Module.Types): 300-309 are
// admission's; 310-319 host resource reservation's.
const (
	CmdSubmit      log.Type      = 300
	CmdSubmitBatch log.Type      = 301
	CmdClaim       log.Type      = 302
	CmdComplete    log.Type      = 303
	CmdCancel      log.Type      = 304
	QueryGet       fsm.QueryType = 300
	QueryList      fsm.QueryType = 301

	CmdPutHost          log.Type      = 310
	CmdTelemetry        log.Type      = 311
	CmdSetProfiles      log.Type      = 312
	CmdReserve          log.Type      = 313
	CmdRelease          log.Type      = 314
	CmdReclaim          log.Type      = 315
	CmdRewriteExtension log.Type      = 316
	QueryReservations   fsm.QueryType = 310
	QueryProfiles       fsm.QueryType = 311
	QueryHosts          fsm.QueryType = 312
)

// Module is the work-item FSM module; every node of a cluster must run it.
// Each reservation command is its own capability, so a cluster with a
// member whose binary lacks them refuses them everywhere alike; submit
// and submit-batch version 2 check metadata.resource_reservation.
func Module() fsm.Module {
	return fsm.Module{
		Name:   Name,
		Types:  fsm.TypeRange{First: 300, Last: 399},
		Tables: append(tables(), reservationTables()...),
		Gauges: gauges,
		Commands: []fsm.CommandSpec{
			// Each command's payload, access and prologue: its fsm.Typed
			// (commands.go).
			//
			// submit and submit-batch 2: the extension's closed schema; 3:
			// RFC 8785 fingerprints (fingerprint_rules.go), keys by tenant
			// (ledger.go), every digest checked, the extension's
			// sensitive-value rules.
			{Type: CmdSubmit, Name: "workitem_submit", MaxVersion: 3, Apply: fsm.Handle(submitCommand()),
				LedgerTenant: hashedScope(opAdmit).Tenant, LedgerTenantFrom: admitTenantLedger, LedgerLegacyScope: hashedScope(opAdmit).Legacy,
				LedgerRole: identity.RoleMember},
			{Type: CmdSubmitBatch, Name: "workitem_submit_batch", MaxVersion: 3, Apply: fsm.Handle(submitBatchCommand()),
				LedgerTenant: hashedScope(opAdmit).Tenant, LedgerTenantFrom: admitTenantLedger, LedgerLegacyScope: hashedScope(opAdmit).Legacy,
				LedgerRole: identity.RoleMember},
			// claim 2: keys by tenant.
			{Type: CmdClaim, Name: "workitem_claim", MaxVersion: 2, Apply: fsm.Handle(claimCommand()),
				LedgerTenant: hashedScope(opClaim).Tenant, LedgerTenantFrom: claimTenantLedger, LedgerLegacyScope: hashedScope(opClaim).Legacy,
				LedgerRole: identity.RoleMember},
			{Type: CmdComplete, Name: "workitem_complete", MaxVersion: 2, Apply: fsm.Handle(completeCommand())}, // 2: see completeV2
			{Type: CmdCancel, Name: "workitem_cancel", MaxVersion: 1, Apply: fsm.Handle(cancelCommand())},
			{Type: CmdPutHost, Name: "workitem_host_put", MaxVersion: 2, Apply: fsm.Handle(putHostCommand())}, // 2: see putHostV2
			{Type: CmdTelemetry, Name: "workitem_host_telemetry", MaxVersion: 1, Apply: fsm.Handle(telemetryCommand())},
			{Type: CmdSetProfiles, Name: "workitem_profiles_set", MaxVersion: 2, Apply: fsm.Handle(setProfilesCommand())}, // 2: see profilesV2
			{Type: CmdReserve, Name: "workitem_reserve", MaxVersion: 3, Apply: fsm.Handle(reserveCommand())},              // 2, 3: see reserveV2, reserveV3
			{Type: CmdRelease, Name: "workitem_release", MaxVersion: 2, Apply: fsm.Handle(releaseCommand())},              // 2: see releaseV2
			{Type: CmdReclaim, Name: "workitem_reservation_reclaim", MaxVersion: 1, Apply: fsm.Handle(reclaimCommand())},
			{Type: CmdRewriteExtension, Name: "workitem_extension_rewrite", MaxVersion: 2, Apply: fsm.Handle(rewriteExtensionCommand())}, // 2: see rewriteSensitive
		},
		Queries: []fsm.QuerySpec{
			{Type: QueryGet, Name: "workitem_get", Run: runGet},
			{Type: QueryList, Name: "workitem_list", Run: runList},
			{Type: QueryReservations, Name: "workitem_reservations", Run: runQuery},
			{Type: QueryProfiles, Name: "workitem_profiles", Run: runProfiles},
			{Type: QueryHosts, Name: "workitem_hosts", Run: runHosts},
		},
		Tick: tick,
	}
}
