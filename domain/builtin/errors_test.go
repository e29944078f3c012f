package builtin_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/arbiterhq/arbiter/allocation"
	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/projection"
)

// Every error type a domain (or the client side of the cluster) returns
// answers one code, whichever way a caller asks: errors.Is with the
// code's sentinel, errs.CodeOf, and errs.Status through it (issue 43: an
// allocation loser was errors.Is conflict and CodeOf internal).
func TestEveryDomainErrorHasOneCode(t *testing.T) {
	cases := []struct {
		name string
		err  error
		code errs.Code
	}{
		{"errs.Error", errs.Errorf(errs.CodeStaleFence, "fence 3 is stale"), errs.CodeStaleFence},
		{"allocation.Conflict (occupied)", &allocation.Conflict{Err: allocation.ErrAllocationConflict, Code: allocation.CodeKeyOccupied}, errs.CodeConflict},
		{"allocation.Conflict (superseded)", &allocation.Conflict{Err: allocation.ErrTaskSuperseded, SupersededBy: 94}, errs.CodeConflict},
		{"authority unavailable", authority.FromCluster(errs.Unknown("leadership lost")), errs.CodeUnavailable},
		{"client.CursorExpiredError", &client.CursorExpiredError{Err: errs.New(errs.CodeCursorExpired, "gone")}, errs.CodeCursorExpired},
		{"projection stale watermark (a code the domain registers)", errs.Errorf(projection.CodeStaleWatermark, "watermark 4 after 5"), projection.CodeStaleWatermark},
	}
	sentinels := []*errs.Error{errs.Invalid, errs.NotFound, errs.Conflict, errs.IdempotencyConflict, errs.StaleFence,
		errs.StaleEpoch, errs.Expired, errs.Exhausted, errs.Backpressure, errs.Unavailable, errs.Unauthorized,
		errs.Forbidden, errs.Internal, errs.CursorExpired, errs.TooLarge, projection.StaleWatermark, errs.MethodNotAllowed}
	if !errs.Known(projection.CodeStaleWatermark) || errs.Status(projection.CodeStaleWatermark) != http.StatusConflict {
		t.Fatalf("projection's registered code: known %v, status %d", errs.Known(projection.CodeStaleWatermark), errs.Status(projection.CodeStaleWatermark))
	}
	for _, c := range cases {
		for _, err := range []error{c.err, fmt.Errorf("wrapped: %w", c.err)} {
			if got := errs.CodeOf(err); got != c.code {
				t.Errorf("%s: CodeOf %q, want %q", c.name, got, c.code)
			}
			if errs.Status(errs.CodeOf(err)) != errs.Status(c.code) {
				t.Errorf("%s: Status %d", c.name, errs.Status(errs.CodeOf(err)))
			}
			for _, s := range sentinels {
				if errors.Is(err, s) != (s.Code == c.code) {
					t.Errorf("%s: errors.Is(%s) = %v", c.name, s.Code, errors.Is(err, s))
				}
			}
		}
	}
}
