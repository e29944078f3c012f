package allocation_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/allocation"
	"github.com/arbiterhq/arbiter/errs"
)

// The service refuses what the FSM would refuse without reading the
// state, before proposing anything: every such request is invalid and
// leaves the log as it was. A window's shape error names the proposal.
func TestServiceRefusesBeforeProposing(t *testing.T) {
	l, s, f := newFixtureService(t)
	ctx := context.Background()
	long := strings.Repeat("x", allocation.MaxTitleBytes+1)
	for name, call := range map[string]func() error{
		"create, blank title": func() error {
			_, err := s.CreateTask(ctx, f.Space, allocation.CreateTaskRequest{Title: " \u00a0\t", DeliveryMode: "result"})
			return err
		},
		"create, title too long": func() error {
			_, err := s.CreateTask(ctx, f.Space, allocation.CreateTaskRequest{Title: long, DeliveryMode: "result"})
			return err
		},
		"create, title not UTF-8": func() error {
			_, err := s.CreateTask(ctx, f.Space, allocation.CreateTaskRequest{Title: "a\xffb", DeliveryMode: "result"})
			return err
		},
		"create, work item X1": func() error {
			_, err := s.CreateTask(ctx, f.Space, allocation.CreateTaskRequest{Title: "a", DeliveryMode: "result", WorkItemID: ptr("X1")})
			return err
		},
		"reserve, blank title": func() error {
			_, err := s.Reserve(ctx, f.Space, allocation.ReserveRequest{ProposalID: "p", Title: "", DeliveryMode: "result"})
			return err
		},
		"reserve, work item T": func() error {
			_, err := s.Reserve(ctx, f.Space, allocation.ReserveRequest{ProposalID: "p", Title: "a", DeliveryMode: "result", WorkItemID: ptr("T")})
			return err
		},
		"reserve, no proposal id": func() error {
			_, err := s.Reserve(ctx, f.Space, allocation.ReserveRequest{Title: "a", DeliveryMode: "result"})
			return err
		},
		"window, a proposal id twice": func() error {
			_, err := s.Window(ctx, f.Space, allocation.WindowRequest{Proposals: []allocation.Proposal{
				{ProposalID: "p", Title: "a", DeliveryMode: "result"}, {ProposalID: "p", Title: "b", DeliveryMode: "result"}}})
			if err == nil || !strings.Contains(err.Error(), "proposals[1]") {
				return errors.New("the error does not name proposals[1]: " + errString(err))
			}
			return err
		},
		"window, a title not UTF-8": func() error {
			_, err := s.Window(ctx, f.Space, allocation.WindowRequest{Proposals: []allocation.Proposal{{ProposalID: "p", Title: "\xff", DeliveryMode: "result"}}})
			return err
		},
	} {
		before := len(l.Log())
		if err := call(); !errors.Is(err, errs.Invalid) {
			t.Errorf("%s: %v, want invalid", name, err)
		}
		if after := len(l.Log()); after != before {
			t.Errorf("%s: proposed %d entries", name, after-before)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
