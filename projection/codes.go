package projection

import (
	"net/http"

	"github.com/arbiterhq/arbiter/errs"
)

// The decision codes the projection domain adds to errs' set
// (projection-writer-lease.txt names them), registered while the package
// initializes, so that they are known (errs.Known) and map to their
// status (errs.Status) wherever the package is linked.
var (
	// CodeStaleWatermark: a producer submitted a watermark below the one
	// its channel holds. 409.
	CodeStaleWatermark = errs.MustRegister("stale_watermark", http.StatusConflict)
	// StaleWatermark is CodeStaleWatermark's sentinel, for errors.Is.
	StaleWatermark = &errs.Error{Code: CodeStaleWatermark}
)
