package authority

import (
	"errors"
	"fmt"

	"github.com/arbiterhq/arbiter/errs"
)

// ErrAuthorityUnavailable matches (errors.Is) every failure that means the
// authoritative graph could not decide: no quorum, no leader, a timeout, a
// contended id that did not settle within the retry bound. There is no
// local fallback; callers defer and retry (with the same request ref, which
// is safe).
var ErrAuthorityUnavailable = errors.New("concept reservation authority unavailable")

// unavailable wraps the cause so that it still carries its error code (and
// outcome-unknown flag) for the HTTP layer.
type unavailable struct{ cause error }

func (u *unavailable) Error() string        { return fmt.Sprintf("%v: %v", ErrAuthorityUnavailable, u.cause) }
func (u *unavailable) Unwrap() error        { return u.cause }
func (u *unavailable) Is(target error) bool { return target == ErrAuthorityUnavailable }

// FromCluster passes domain errors through and marks every unavailable
// one as the authority being unavailable. Clients of the authority over
// other transports use it on their errors.
func FromCluster(err error) error { return fromCluster(err) }

func fromCluster(err error) error {
	if err == nil || !errors.Is(err, errs.Unavailable) {
		return err
	}
	return &unavailable{cause: err}
}

// failClosed is the error for an id whose claim kept changing under us.
func failClosed(id string, attempts int) error {
	return &unavailable{cause: errs.Errorf(errs.CodeUnavailable, "%s changed under %d consecutive attempts; try again later", id, attempts)}
}
