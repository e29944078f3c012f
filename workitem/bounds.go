package workitem

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/bounds"
)

// The spec's bounds, and the ones this package adds (each an explicit
// error, never a truncation).
const (
	MaxBatch          = 128
	MaxDependencies   = 1024
	MaxProvenanceRefs = 64
	MaxPriority       = 1024
	MaxAttempts       = 4096
	MaxTenantInFlight = 4096
	MaxInputRefBytes  = 1 << 20
	MaxMetadataBytes  = 64 << 10
	MaxResultRefBytes = 64 << 10
	// MaxRequestBytes bounds one submit or batch request as encoded on
	// the wire (the HTTP body); MaxPayloadBytes bounds it as a command
	// payload, with room for msgpack naming fields the JSON left out.
	MaxRequestBytes = 4 << 20
	MaxPayloadBytes = MaxRequestBytes + 256<<10
	// MaxPage bounds a list page; MaxScanRows the rows one claim or read
	// may examine (the spec's 50,000-row admission scan cap).
	MaxPage     = 128
	MaxScanRows = 50_000
	MaxKinds    = 16
	MaxTTL      = 24 * time.Hour
	// MaxDeadlineUnix is 9999-12-31T23:59:59Z.
	MaxDeadlineUnix = 253402300799
	// TerminalRetention is how long an ended item stays readable (and
	// usable as a dependency) before Tick forgets it.
	TerminalRetention = 24 * time.Hour
	// InlineCascade is how many dependents the command that ends an item
	// updates itself; Tick does the rest, budget by budget.
	InlineCascade = 128
	// DefaultGraph is the graph of a request that names none.
	DefaultGraph = "default"
)

// generatedIDPrefix starts every work item id the FSM assigns
// ("wi-<log index>-<n>"); a caller's id may not, so the two never collide.
const generatedIDPrefix = "wi-"

// fieldErr is an invalid error that names its field in detail.field.
func fieldErr(field, format string, args ...any) *errs.Error {
	e := errs.Errorf(errs.CodeInvalid, field+": "+format, args...)
	e.Detail = map[string]any{"field": field}
	return e
}

// withField adds detail.field to an invalid error (a copy).
func withField(err error, field string) error {
	e := errs.From(err)
	if e == nil {
		return nil
	}
	n := *e
	n.Detail = map[string]any{"field": field}
	for k, v := range e.Detail {
		n.Detail[k] = v
	}
	return &n
}

func ident(field, s string) error {
	if err := bounds.Identifier(field, s); err != nil {
		return withField(err, field)
	}
	return nil
}

func optionalIdent(field, s string) error {
	if err := bounds.OptionalIdentifier(field, s); err != nil {
		return withField(err, field)
	}
	return nil
}

func checkRange(field string, v, lo, hi int64) error {
	if v < lo || v > hi {
		return fieldErr(field, "must be between %d and %d, not %d", lo, hi, v)
	}
	return nil
}

// checkDigest requires "sha256:" and 64 lowercase hex digits.
func checkDigest(field, s string) error {
	const prefix = "sha256:"
	if len(s) != len(prefix)+64 || s[:len(prefix)] != prefix {
		return fieldErr(field, `must be "sha256:" and 64 lowercase hex digits`)
	}
	for _, c := range s[len(prefix):] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return fieldErr(field, `must be "sha256:" and 64 lowercase hex digits`)
		}
	}
	return nil
}

func checkTTL(ms int64) error {
	return checkRange("ttl_ms", ms, 1, MaxTTL.Milliseconds())
}

// graphOf is a request's graph: the one named, or DefaultGraph.
func graphOf(g string) string {
	if g == "" {
		return DefaultGraph
	}
	return g
}

// graphHash names (tenant, graph) in an idempotency scope in a fixed
// length whatever the refs: 32 hex digits of SHA-256(tenant NUL graph).
func graphHash(tenant, graph string) string {
	sum := sha256.Sum256([]byte(tenant + "\x00" + graph))
	return hex.EncodeToString(sum[:graphHashLen/2])
}

const graphHashLen = 32
