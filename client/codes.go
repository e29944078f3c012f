package client

import (
	"net/http"

	"github.com/arbiterhq/arbiter/errs"
)

// The decision codes of domains the client answers with. A domain
// registers its own codes (errs.MustRegister) where it is linked; the
// client links no domain, so it registers the codes it decodes itself,
// with the same status (errs.Register accepts the same registration
// twice and refuses another status, so the client and a domain that
// disagree cannot be linked into one program). Without this a
// stale_watermark answer would decode as internal.
var (
	// CodeStaleWatermark: a producer submitted a watermark below the one
	// its channel holds (the projection domain's code, 409).
	CodeStaleWatermark = errs.MustRegister("stale_watermark", http.StatusConflict)
	// StaleWatermark is CodeStaleWatermark's sentinel, for errors.Is.
	StaleWatermark = &errs.Error{Code: CodeStaleWatermark}
)
