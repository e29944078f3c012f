package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/retry"
)

func TestUnknownRetriesUntilKnown(t *testing.T) {
	calls := 0
	v, err := retry.Unknown(context.Background(), func(context.Context) (int, error) {
		calls++
		if calls < 3 {
			return 0, errs.Unknown("leadership lost")
		}
		return 7, nil
	})
	if v != 7 || err != nil || calls != 3 {
		t.Fatalf("got %d, %v after %d calls", v, err, calls)
	}
}

func TestUnknownStopsAtAKnownFailure(t *testing.T) {
	calls := 0
	_, err := retry.Unknown(context.Background(), func(context.Context) (int, error) {
		calls++
		return 0, errs.Errorf(errs.CodeConflict, "taken")
	})
	if !errors.Is(err, errs.Conflict) || calls != 1 {
		t.Fatalf("%v after %d calls", err, calls)
	}
}

func TestUnknownEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	calls := 0
	_, err := retry.Unknown(ctx, func(context.Context) (int, error) {
		calls++
		return 0, errs.Unknown("timeout")
	})
	if !errs.IsOutcomeUnknown(err) || calls < 2 || ctx.Err() == nil {
		t.Fatalf("%v after %d calls (ctx %v)", err, calls, ctx.Err())
	}
}

func TestUnavailableRetriesOnlyUnavailable(t *testing.T) {
	calls := 0
	err := retry.Unavailable(context.Background(), func(context.Context) error {
		calls++
		if calls < 2 {
			return errs.New(errs.CodeUnavailable, "no known leader")
		}
		return errs.New(errs.CodeForbidden, "not an admin")
	})
	if !errors.Is(err, errs.Forbidden) || calls != 2 {
		t.Fatalf("%v after %d calls", err, calls)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := retry.Unavailable(ctx, func(context.Context) error { return errs.New(errs.CodeUnavailable, "down") }); !errors.Is(err, errs.Unavailable) {
		t.Fatalf("at the deadline: %v", err)
	}
}
