package projection_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/projection"
	"github.com/hashicorp/raft"
)

// projTypes are the command types the fuzz target wraps payloads in.
var projTypes = []log.Type{projection.CmdSetConfig, projection.CmdRegisterTarget, projection.CmdSubmit,
	projection.CmdAcquire, projection.CmdPublish, projection.CmdRelease}

var fuzzPrincipals = []identity.Principal{{}, agent, router, frontier, admin, reader, stranger}

// fuzzHash is the token hash of the seed's leases: sha256 of 32 bytes of n.
func fuzzHash(n byte) string {
	sum := sha256.Sum256(bytes.Repeat([]byte{n}, 32))
	return hex.EncodeToString(sum[:])
}

// projSeed is the log of the state every fuzz input starts from: lease
// TTL set; target A with both channels (route fresh, frontier degraded)
// and a held lease (token hash fuzzHash(1)); target B published once, its
// lease consumed (fuzzHash(2)), then granted again and expired.
type projSeed struct {
	log            []*raft.Log
	now            int64
	a, b           string
	epochA         uint64
	epochB, epochC uint64 // B's consumed and expired leases
}

func newProjSeed(t testing.TB) projSeed {
	l, err := fsmtest.New(projection.Module())
	if err != nil {
		t.Fatal(err)
	}
	s := projection.NewService(l, l)
	ctx := context.Background()
	must := func(res *fsm.Response, err error) *fsm.Response {
		t.Helper()
		if err == nil && res != nil && res.Err != nil {
			err = res.Err
		}
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	raw := func(typ log.Type, p any) (*fsm.Response, error) {
		return l.Propose(ctx, log.Command{Type: typ, Version: 1, Payload: log.MustMarshal(p)})
	}
	if _, err := s.SetConfig(ctx, projection.ConfigRequest{LeaseTTLMs: 5000}); err != nil {
		t.Fatal(err)
	}
	a, err := s.RegisterTarget(as(agent), projection.TargetRequest{Attested: attested("a"), Channels: bothChannels})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.RegisterTarget(as(agent), projection.TargetRequest{Attested: attested("b"), Channels: bothChannels[1:]})
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range []struct {
		who     identity.Principal
		target  string
		channel string
		w       uint64
		body    string
	}{
		{router, a.TargetID, projection.ChannelComputedRoute, 4, "r4"},
		{frontier, a.TargetID, projection.ChannelLifecycleFrontier, 2, "f2"},
		{router, b.TargetID, projection.ChannelComputedRoute, 1, "b1"},
	} {
		env := envelope(sub.channel, sub.w, fsmtest.Epoch+60_000, sub.body)
		if _, err := s.Submit(as(sub.who), projection.SubmitRequest{TargetID: sub.target, Channel: sub.channel, SourceWatermark: sub.w, Envelope: env}); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = s.Submit(as(frontier), projection.SubmitRequest{TargetID: a.TargetID, Channel: projection.ChannelLifecycleFrontier, SourceWatermark: 2,
		Envelope: envelope(projection.ChannelLifecycleFrontier, 2, fsmtest.Epoch+60_000, "conflict")})
	resB := must(raw(projection.CmdAcquire, rawAcquire{TargetID: b.TargetID, HolderInstanceDigest: digest("hb"), TokenSHA256: fuzzHash(2)}))
	var leaseB projection.Lease
	if err := log.Unmarshal(resB.Result, &leaseB); err != nil {
		t.Fatal(err)
	}
	must(raw(projection.CmdPublish, rawFence{TargetID: b.TargetID, TokenSHA256: fuzzHash(2), FencingEpoch: leaseB.FencingEpoch}))
	resC := must(raw(projection.CmdAcquire, rawAcquire{TargetID: b.TargetID, HolderInstanceDigest: digest("hb"), TokenSHA256: fuzzHash(3)}))
	var leaseC projection.Lease
	if err := log.Unmarshal(resC.Result, &leaseC); err != nil {
		t.Fatal(err)
	}
	l.Advance(6 * time.Second)
	resA := must(raw(projection.CmdAcquire, rawAcquire{TargetID: a.TargetID, HolderInstanceDigest: digest("ha"), TokenSHA256: fuzzHash(1)}))
	var leaseA projection.Lease
	if err := log.Unmarshal(resA.Result, &leaseA); err != nil {
		t.Fatal(err)
	}
	return projSeed{log: l.Log(), now: fsmtest.Epoch + 6000, a: a.TargetID, b: b.TargetID, epochA: leaseA.FencingEpoch,
		epochB: leaseB.FencingEpoch, epochC: leaseC.FencingEpoch}
}

// replica is a fresh FSM that applied the seed log, with an observer
// recording what its writer is asked to do.
func (s projSeed) replica(t testing.TB) (*fsm.FSM, *[]projection.Event) {
	var events []projection.Event
	d := projection.Domain(projection.WithObserver(func(e projection.Event) { events = append(events, e) }))
	f, err := fsm.New(fsm.Config{Modules: []fsm.Module{d.Module()}})
	if err != nil {
		t.Fatal(err)
	}
	f.ApplyBatch(s.log)
	events = nil
	return f, &events
}

func fuzzPayloads(s projSeed) map[log.Type][][]byte {
	route, front := projection.ChannelComputedRoute, projection.ChannelLifecycleFrontier
	env := func(ch string, w uint64) []byte {
		b := envelope(ch, w, fsmtest.Epoch+60_000, "x")
		c, _ := canonJSON(b)
		return c
	}
	valid := map[log.Type][]any{
		projection.CmdSetConfig: {rawConfig{LeaseTTLMs: 1}, rawConfig{LeaseTTLMs: 3_600_000}},
		projection.CmdRegisterTarget: {
			rawRegister{AgentID: agent.ID, Attested: attested("a"), Channels: []projection.ChannelBinding{bothChannels[1], bothChannels[0]}},
			rawRegister{AgentID: agent.ID, Attested: attested("new"), Channels: bothChannels[1:]},
		},
		projection.CmdSubmit: {
			rawSubmit{TargetID: s.a, Channel: route, SourceWatermark: 5, Envelope: env(route, 5)},
			rawSubmit{TargetID: s.a, Channel: route, SourceWatermark: 4, Envelope: env(route, 4)},
			rawSubmit{TargetID: s.a, Channel: front, SourceWatermark: 2, Envelope: env(front, 2)},
			rawSubmit{TargetID: s.b, Channel: front, SourceWatermark: 9, Envelope: env(front, 9)},
		},
		projection.CmdAcquire: {
			rawAcquire{TargetID: s.a, HolderInstanceDigest: digest("x"), TokenSHA256: fuzzHash(4)},
			rawAcquire{TargetID: s.b, HolderInstanceDigest: digest("x"), TokenSHA256: fuzzHash(5)},
		},
		projection.CmdPublish: {
			rawFence{TargetID: s.a, TokenSHA256: fuzzHash(1), FencingEpoch: s.epochA},
			rawFence{TargetID: s.a, TokenSHA256: fuzzHash(2), FencingEpoch: s.epochA},
			rawFence{TargetID: s.b, TokenSHA256: fuzzHash(2), FencingEpoch: s.epochB},
			rawFence{TargetID: s.b, TokenSHA256: fuzzHash(3), FencingEpoch: s.epochC},
		},
		projection.CmdRelease: {
			rawFence{TargetID: s.a, TokenSHA256: fuzzHash(1), FencingEpoch: s.epochA},
			rawFence{TargetID: s.b, TokenSHA256: fuzzHash(3), FencingEpoch: s.epochC},
		},
	}
	return fsmtest.PayloadVariants(valid)
}

// FuzzApplyProjection applies arbitrary payload bytes, wrapped in a valid
// envelope of each projection command type and run as each principal,
// after the seed state.
//
// Whatever the bytes: no panic; a failed command changes nothing but FSM
// bookkeeping and asks its writer for nothing (no grant, no file); only a
// successful publish asks for a file; every target still reads back
// consistently (its last publication parses, names itself, and is what
// .../current answers); and a second replica applying the same entry
// reaches the same state.
func FuzzApplyProjection(f *testing.F) {
	seed := newProjSeed(f)
	for typ, payloads := range fuzzPayloads(seed) {
		kind := uint8(0)
		for k, pt := range projTypes {
			if pt == typ {
				kind = uint8(k)
			}
		}
		for i, p := range payloads {
			f.Add(kind, p, uint8(i), uint16(i*97))
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, payload []byte, who uint8, advance uint16) {
		cmd := log.Command{Type: projTypes[int(kind)%len(projTypes)], Version: 1, Stamp: seed.now + int64(advance)*10,
			Principal: fuzzPrincipals[int(who)%len(fuzzPrincipals)], Payload: payload}
		data, err := log.Encode(cmd)
		if err != nil {
			t.Skip("not a valid envelope:", err)
		}
		a, events := seed.replica(t)
		before := readStored(t, a).digest()
		entry := &raft.Log{Index: a.AppliedIndex() + 1, Term: 1, Type: raft.LogCommand, Data: data}
		res, ok := a.Apply(entry).(*fsm.Response)
		if !ok || res == nil {
			t.Fatalf("Apply returned no *fsm.Response")
		}
		if n := a.Panics(); n != 0 {
			t.Fatalf("%d handler panics", n)
		}
		if res.Err != nil {
			if readStored(t, a).digest() != before {
				t.Fatalf("a failed command (%v) changed the state", res.Err)
			}
			if len(*events) != 0 {
				t.Fatalf("a failed command (%v) asked the writer for %+v", res.Err, *events)
			}
		}
		for _, e := range *events {
			switch {
			case e.Kind == projection.EventGranted && cmd.Type == projection.CmdAcquire:
			case e.Kind == projection.EventSkipped && cmd.Type == projection.CmdPublish:
				var pr projection.PublishResult
				if err := log.Unmarshal(res.Result, &pr); err != nil || pr.Replayed || pr.PublicationSeq != e.PublicationSeq {
					t.Fatalf("publish effect %+v for result %+v (%v)", e, pr, err)
				}
			default:
				t.Fatalf("command %d asked the writer for %+v", cmd.Type, e)
			}
		}
		checkTargets(t, a, seed.a, seed.b)
		b, _ := seed.replica(t)
		resB := b.Apply(entry).(*fsm.Response)
		if errCode(res) != errCode(resB) || !bytes.Equal(res.Result, resB.Result) {
			t.Fatalf("replicas answered %v and %v", res.Err, resB.Err)
		}
		_, ha, errA := a.StateHash()
		_, hb, errB := b.StateHash()
		if errA != nil || errB != nil || ha != hb {
			t.Fatalf("replicas reached different states after the same entry (%v %v)", errA, errB)
		}
	})
}

func errCode(r *fsm.Response) string {
	if r.Err == nil {
		return ""
	}
	return string(r.Err.Code)
}

// checkTargets reads targets as an admin and checks that each reads back
// consistently.
func checkTargets(t *testing.T, f *fsm.FSM, ids ...string) {
	t.Helper()
	s := projection.NewService(nil, localReader{f})
	for _, id := range ids {
		v, err := s.Target(as(admin), id, fsm.Stale)
		if err != nil {
			t.Fatalf("read %s: %v", id, err)
		}
		if v.Lease != nil && v.Lease.FencingEpoch == 0 {
			t.Fatalf("%s: lease at epoch 0", id)
		}
		if v.LastPublication == nil {
			continue
		}
		b, err := s.Current(as(admin), id, fsm.Stale)
		if err != nil {
			t.Fatalf("current of %s: %v", id, err)
		}
		p, err := projection.ParsePublication(b)
		sum := sha256.Sum256(b)
		if err != nil || p.TargetID != id || p.PublicationSeq != v.LastPublication.PublicationSeq || p.FencingEpoch != v.LastPublication.FencingEpoch ||
			hex.EncodeToString(sum[:]) != v.LastPublication.SHA256 || len(b) != v.LastPublication.Bytes || p.FencingEpoch >= p.PublicationSeq {
			t.Fatalf("%s: publication %+v does not match %s (%v)", id, v.LastPublication, b, err)
		}
	}
}

// localReader reads an FSM directly, as the principal on the context.
type localReader struct{ f *fsm.FSM }

func (r localReader) Query(ctx context.Context, q fsm.Query) ([]byte, error) {
	p, _ := fsm.PrincipalFrom(ctx)
	return r.f.Query(p, q)
}
