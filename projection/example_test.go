package projection_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/arbiterhq/arbiter/cluster/clustertest"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/projection"
)

// An agent admits a target, a producer submits a route envelope, and two
// writer processes race for the target's lease: the first stalls past
// its lease, the second takes over and publishes; the first's late
// publish is refused and current.json is the second's. (In a deployment
// the Proposer and Reader are an embedded cluster.Node, a program that
// runs no node uses package client's Projection, and every node writes
// the file; here one bare FSM with a runtime root.)
func Example() {
	root, _ := os.MkdirTemp("", "projection-example-")
	defer os.RemoveAll(root)
	local, err := clustertest.NewLocal(projection.Domain(projection.WithRuntimeRoot(root)))
	if err != nil {
		panic(err)
	}
	svc := projection.NewService(local, local)
	as := func(id, role string) context.Context {
		return fsm.WithPrincipal(context.Background(), identity.Principal{ID: id, Roles: []string{role}})
	}
	agent, producer, ops := as("agent-7", identity.RoleMember), as("router", identity.RoleMember), as("ops", identity.RoleAdmin)

	// No default lease: acquire fails until an admin sets one.
	if _, err := svc.SetConfig(ops, projection.ConfigRequest{LeaseTTLMs: 10_000}); err != nil {
		panic(err)
	}
	target, err := svc.RegisterTarget(agent, projection.TargetRequest{
		Attested: projection.Attested{SchemaVersion: "1", Capability: "hook-advisory", HarnessType: "claude-code", ProjectionKind: "lane",
			InstanceKeyDigest: "sha256:" + fmt.Sprintf("%064x", 1), WorkspaceKeyDigest: "sha256:" + fmt.Sprintf("%064x", 2)},
		Channels: []projection.ChannelBinding{{Channel: projection.ChannelComputedRoute, Producer: "router"}},
	})
	if err != nil {
		panic(err)
	}
	envelope := fmt.Sprintf(`{"schema":"computed-route.v1","not_authority":true,"watermark":1,"expires_at_ms":%d,
		"provenance":{"run":"r1"},"citations":["#15087"],"body":{"next":"review"}}`, clustertest.Epoch+3_600_000)
	sub, err := svc.Submit(producer, projection.SubmitRequest{TargetID: target.TargetID, Channel: projection.ChannelComputedRoute,
		SourceWatermark: 1, Envelope: []byte(envelope)})
	if err != nil {
		panic(err)
	}
	fmt.Println("submit:", sub.Status)

	first, _ := svc.Acquire(agent, projection.AcquireRequest{TargetID: target.TargetID, HolderInstanceDigest: "sha256:" + fmt.Sprintf("%064x", 10)})
	_, err = svc.Acquire(agent, projection.AcquireRequest{TargetID: target.TargetID, HolderInstanceDigest: "sha256:" + fmt.Sprintf("%064x", 11)})
	fmt.Println("second writer while held:", errs.CodeOf(err), errs.From(err).Detail["retry_after_ms"])

	local.Advance(11 * time.Second) // the first writer stalls past its lease
	second, _ := svc.Acquire(agent, projection.AcquireRequest{TargetID: target.TargetID, HolderInstanceDigest: "sha256:" + fmt.Sprintf("%064x", 11)})
	fmt.Println("takeover: epoch", first.FencingEpoch, "->", second.FencingEpoch)
	pub, err := svc.Publish(agent, projection.FenceRequest{TargetID: target.TargetID, Token: second.Token, FencingEpoch: second.FencingEpoch})
	if err != nil {
		panic(err)
	}
	_, err = svc.Publish(agent, projection.FenceRequest{TargetID: target.TargetID, Token: first.Token, FencingEpoch: first.FencingEpoch})
	fmt.Println("stale publish:", errors.Is(err, errs.StaleFence))
	_, err = svc.Release(agent, projection.FenceRequest{TargetID: target.TargetID, Token: first.Token, FencingEpoch: first.FencingEpoch})
	fmt.Println("stale release:", errs.CodeOf(err))

	path, _ := projection.TargetPath(root, target.TargetID)
	b, _ := os.ReadFile(path)
	p, _ := projection.ParsePublication(b)
	fmt.Println("current.json: publication", p.PublicationSeq, "epoch", p.FencingEpoch, "same as published:", pub.PublicationSeq == p.PublicationSeq)
	for _, c := range p.Channels {
		fmt.Printf("  %s %s watermark %d: %s\n", c.Channel, c.Status, c.SourceWatermark, c.Envelope)
	}
	// Output:
	// submit: accepted
	// second writer while held: conflict 10000
	// takeover: epoch 4 -> 6
	// stale publish: true
	// stale release: stale_fence
	// current.json: publication 7 epoch 6 same as published: true
	//   computed-route.v1 fresh watermark 1: {"body":{"next":"review"},"citations":["#15087"],"expires_at_ms":1767229200000,"not_authority":true,"provenance":{"run":"r1"},"schema":"computed-route.v1","watermark":1}
}
