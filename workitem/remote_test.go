package workitem_test

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/rawremote"
	"github.com/arbiterhq/arbiter/workitem"
)

// remoteService: the Go API over the raw wire (internal/rawremote) from outside the
// cluster; errors keep their codes across the wire.
func (f *httpFixture) remoteService() {
	t := f.t
	r := rawremote.New(f.base).WithToken(httpToken("p1"))
	s := workitem.NewService(r, r)
	res, err := s.Submit(bg, req("remote-1"))
	if err != nil || !res.Created {
		t.Fatalf("submit over Remote: %+v %v", res, err)
	}
	again, err := s.Submit(bg, req("remote-1"))
	if err != nil || !again.Replayed || again.CommandSequence != res.CommandSequence {
		t.Fatalf("replay over Remote: %+v %v", again, err)
	}
	if _, err := s.Submit(bg, req("remote-2", "nowhere")); errs.CodeOf(err) != errs.CodeInvalid || errs.From(err).Detail["reason"] != "dependency_missing" {
		t.Fatalf("a missing dependency over Remote: %v", err)
	}
	got, err := s.Get(bg, workitem.GetRequest{TenantRef: "t", WorkItemID: res.WorkItemID}, fsm.Linearizable)
	if err != nil || got.WorkItem.CommandSequence != res.CommandSequence {
		t.Fatalf("get over Remote: %+v %v", got, err)
	}
	if err := s.Require(bg); err != nil {
		t.Fatalf("the cluster does not enable every work-item command: %v", err)
	}
}
