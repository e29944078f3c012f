package cluster

import (
	"context"
	"fmt"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/hashicorp/raft"
)

// A raft Apply error says "not applied" (retryable on the next leader)
// only when raft refused the entry before it reached the log; any error
// after that is an unknown outcome, which must never be retried blindly.
func TestApplyErrorsSayWhetherTheCommandWasApplied(t *testing.T) {
	for _, tc := range []struct {
		err       error
		retryable bool
	}{
		{raft.ErrNotLeader, true},
		{raft.ErrEnqueueTimeout, true},
		{raft.ErrLeadershipTransferInProgress, true},
		{fmt.Errorf("wrapped: %w", raft.ErrLeadershipTransferInProgress), true},
		{raft.ErrLeadershipLost, false},
		{raft.ErrRaftShutdown, false},
		{raft.ErrAbortedByRestore, false},
		{context.DeadlineExceeded, false},
		{context.Canceled, false},
	} {
		got := applyError(tc.err)
		if retryable(got) != tc.retryable {
			t.Errorf("%v: classified as %v (retryable %v), want retryable %v", tc.err, got, retryable(got), tc.retryable)
		}
		if !tc.retryable && !errs.IsOutcomeUnknown(got) {
			t.Errorf("%v: classified as %v, want an unknown outcome", tc.err, got)
		}
	}
}
