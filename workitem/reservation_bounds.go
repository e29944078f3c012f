package workitem

import (
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/workitem/extension"
)

// The bounds of host resource reservation (each an explicit error).
const (
	// MaxHosts bounds the shared hosts; a reserve without a host_id
	// examines each of them, and a query lists them.
	MaxHosts = 128
	// MaxHostLabels bounds a host's labels.
	MaxHostLabels = 16
	// MaxProfiles bounds the profile set.
	MaxProfiles = 64
	// MaxWeight bounds a profile's weight of one dimension.
	MaxWeight = 1000
	// MaxDebt bounds a profile's max_debt (cost units).
	MaxDebt = 1 << 40
	// MaxDecayPerS bounds a profile's decay_per_s (cost units a second).
	MaxDecayPerS = 1 << 30
	// MaxTelemetryAge bounds a profile's telemetry_max_age_ms.
	MaxTelemetryAge = 24 * time.Hour
	// MaxReclaim bounds one reclaim, and MaxQueryPage one query page.
	MaxReclaim   = 128
	MaxQueryPage = 128
	// ReservationRetention is how long an ended reservation stays
	// readable (and answers a repeated release) before Tick forgets it.
	ReservationRetention = time.Hour
	// reclaimScanPerRow x max_count bounds the due reservations one
	// reclaim examines.
	reclaimScanPerRow = 8
	// maxResCursorLen bounds a reservation cursor (it carries ids).
	maxResCursorLen = 1024
)

// generatedReservationPrefix starts every reservation id:
// "rsv-<log index>", unique and never reissued, also after a restore.
const generatedReservationPrefix = "rsv-"

// opaque checks an identifier of the reservation API: bounded, and no
// path or credential-bearing URL (extension.Opaque).
func opaque(field, s string) error {
	if err := extension.Opaque(field, s); err != nil {
		return withField(plainInvalid(err), field)
	}
	return nil
}

func optionalOpaque(field, s string) error {
	if s == "" {
		return nil
	}
	return opaque(field, s)
}

// plainInvalid drops the extension's detail.reason from an error that
// is about a request field, not the record.
func plainInvalid(err error) error {
	e := errs.From(err)
	return errs.New(e.Code, e.Message)
}

func checkDimensions(field string, d Dimensions) error {
	return d.Each(func(name string, v int64) error {
		return checkRange(field+"."+name, v, 0, extension.MaxDimension)
	})
}

// allTenants reports whether p acts for every tenant: the embedding
// host, or a principal whose tenants include "*".
func allTenants(p identity.Principal) bool {
	if p.Trusted() {
		return true
	}
	for _, t := range p.Tenants {
		if t == "*" {
			return true
		}
	}
	return false
}

// checkFleet requires the controller role for every tenant: hosts are
// shared by all tenants, so changing one is not any one tenant's call.
func checkFleet(p identity.Principal, what string) error {
	if !p.HasRole(identity.RoleController) || !allTenants(p) {
		return errs.Errorf(errs.CodeForbidden, "%s needs the controller role for every tenant (tenants \"*\"); principal %q has not", what, p.ID)
	}
	return nil
}

// refuse is a reservation refused for reason (409 conflict with
// detail.reason): nothing changed.
func refuse(reason, format string, args ...any) *errs.Error {
	e := errs.Errorf(errs.CodeConflict, reason+": "+format, args...)
	e.Detail = map[string]any{"reason": reason}
	return e
}
