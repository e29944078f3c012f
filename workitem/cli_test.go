package workitem_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"strings"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/workitem"
)

// cli runs `arbiter workitem args...` against the fixture's cluster as
// principal p1, with stdin, and returns its output and error.
func (f *httpFixture) cli(stdin string, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	env := domain.CLIEnv{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut,
		Connect: func(fs *flag.FlagSet) func() (domain.Conn, error) {
			addr := fs.String("addr", f.base, "API URL")
			return func() (domain.Conn, error) { return cluster.NewRemote(*addr).WithToken(httpToken("p1")), nil }
		}}
	err := workitem.Domain().CLI.Run(env, args)
	return out.String() + errOut.String(), err
}

// commandLine: every `arbiter workitem` command against the cluster.
func (f *httpFixture) commandLine() {
	t := f.t
	sub, _ := json.Marshal(body("cli-1", map[string]any{"graph_ref": "cli", "work_item_id": "cli-a"}))
	out, err := f.cli("", "submit", "--json", string(sub))
	if err != nil || !strings.Contains(out, `"command_sequence": 1`) {
		t.Fatalf("workitem submit: %v\n%s", err, out)
	}
	batch, _ := json.Marshal(map[string]any{"tenant_ref": "t", "graph_ref": "cli", "idempotency_key": "cli-b",
		"requests": []map[string]any{child(map[string]any{"work_item_id": "cli-b", "depends_on": []string{"cli-a"}})}})
	if out, err = f.cli(string(batch), "batch"); err != nil || !strings.Contains(out, `"batch_sequence_range"`) {
		t.Fatalf("workitem batch (stdin): %v\n%s", err, out)
	}
	out, err = f.cli("", "claim", "--json", `{"tenant_ref":"t","graph_ref":"cli","owner_ref":"cli","ttl_ms":60000}`)
	var c workitem.ClaimResult
	if err != nil || json.Unmarshal([]byte(out), &c) != nil || c.WorkItem.WorkItemID != "cli-a" {
		t.Fatalf("workitem claim: %v\n%s", err, out)
	}
	done := fmt.Sprintf(`{"tenant_ref":"t","work_item_id":"cli-a","attempt":%d,"fence":%d,"outcome":"succeeded"}`, c.Attempt, c.Fence)
	if out, err = f.cli("", "complete", "--json", done); err != nil || !strings.Contains(out, `"succeeded"`) {
		t.Fatalf("workitem complete: %v\n%s", err, out)
	}
	if out, err = f.cli("", "cancel", "--json", `{"tenant_ref":"t","work_item_id":"cli-b","reason":"cli"}`); err != nil || !strings.Contains(out, `"cancelled"`) {
		t.Fatalf("workitem cancel: %v\n%s", err, out)
	}
	// The same with typed flags: claim, complete and cancel build their
	// requests; --json and flags together are refused.
	sub, _ = json.Marshal(body("cli-2", map[string]any{"graph_ref": "cli", "work_item_id": "cli-c", "kind": "flags"}))
	if out, err = f.cli("", "submit", "--json", string(sub)); err != nil {
		t.Fatalf("workitem submit: %v\n%s", err, out)
	}
	out, err = f.cli("", "claim", "--tenant", "t", "--graph", "cli", "--owner", "cli", "--kinds", "flags", "--ttl", "1m")
	c = workitem.ClaimResult{}
	if err != nil || json.Unmarshal([]byte(out), &c) != nil || c.WorkItem.WorkItemID != "cli-c" {
		t.Fatalf("workitem claim with flags: %v\n%s", err, out)
	}
	if out, err = f.cli("", "complete", "--tenant", "t", "--id", "cli-c", "--attempt", fmt.Sprint(c.Attempt), "--fence", fmt.Sprint(c.Fence),
		"--outcome", "failed", "--result", "r-1"); err != nil || !strings.Contains(out, `"failed"`) {
		t.Fatalf("workitem complete with flags: %v\n%s", err, out)
	}
	if out, err = f.cli("", "cancel", "--tenant", "t", "--id", "cli-c", "--json", `{}`); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("workitem cancel with --json and flags: %v\n%s", err, out)
	}
	if out, err = f.cli("", "get", "--tenant", "t", "--id", "cli-b"); err != nil || !strings.Contains(out, `"reason": "cli"`) {
		t.Fatalf("workitem get: %v\n%s", err, out)
	}
	if out, err = f.cli("", "list", "--tenant", "t", "--graph", "cli", "--status", "succeeded", "--limit", "5"); err != nil ||
		!strings.Contains(out, `"cli-a"`) || strings.Contains(out, `"cli-b"`) {
		t.Fatalf("workitem list: %v\n%s", err, out)
	}
	if out, err = f.cli("", "get", "--tenant", "t", "--id", "nowhere"); err == nil || !strings.Contains(out, `"not_found"`) {
		t.Fatalf("workitem get of a missing item: %v\n%s", err, out)
	}
	if _, err = f.cli("", "frobnicate"); err == nil {
		t.Fatal("an unknown command succeeded")
	}
	if _, err = f.cli("", "submit", "--json", "{"); err == nil {
		t.Fatal("a body that is not JSON was sent")
	}
}

// remoteService: the Go API over cluster.Remote, as a program outside the
// cluster uses it; errors keep their codes across the wire.
func (f *httpFixture) remoteService() {
	t := f.t
	r := cluster.NewRemote(f.base).WithToken(httpToken("p1"))
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
