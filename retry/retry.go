// Package retry learns the outcome of a write whose outcome is unknown
// (errs.IsOutcomeUnknown: leadership lost, a timeout after the command
// reached the log) by sending it again with the same idempotency key:
// the cluster answers the original result (replayed) or runs the command
// for the first time, never twice. Every caller used to write this loop.
package retry

import (
	"context"
	"errors"
	"time"

	"github.com/arbiterhq/arbiter/errs"
)

// DefaultWait bounds Unknown when ctx has no deadline of its own.
const DefaultWait = 30 * time.Second

// Backoff between attempts: firstWait, doubling up to maxWait.
const (
	firstWait = 50 * time.Millisecond
	maxWait   = time.Second
)

// Unknown calls op, and again while its error says the outcome is
// unknown, until it returns anything else or ctx ends (DefaultWait when
// ctx has no deadline); then it returns op's last result. op must send
// the same request with the same idempotency key every time: that is
// what makes a repeat safe. A write without a key must not be retried.
func Unknown[T any](ctx context.Context, op func(context.Context) (T, error)) (T, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultWait)
		defer cancel()
	}
	wait := firstWait
	for {
		v, err := op(ctx)
		if !errs.IsOutcomeUnknown(err) {
			return v, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, err
		case <-t.C:
		}
		wait = min(2*wait, maxWait)
	}
}

// Unavailable calls op again while it fails with unavailable (no leader
// yet, a command the cluster has not enabled yet), with backoff from
// 200 ms to 5 s, until it succeeds or fails otherwise, or ctx ends (then
// it returns op's last error). For work a node does on its own at start,
// such as proposing the configuration a file seeds; a caller's write
// whose outcome is unknown is Unknown's.
func Unavailable(ctx context.Context, op func(context.Context) error) error {
	for wait := 200 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		err := op(ctx)
		if err == nil || !errors.Is(err, errs.Unavailable) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}
