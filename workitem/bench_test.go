package workitem_test

import (
	"fmt"
	"testing"

	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/arbiterhq/arbiter/workitem"
)

// BenchmarkSubmit is one SubmitWorkItem through the service over a bare
// FSM (encode, apply, decode): the FSM's share of a submit's cost.
func BenchmarkSubmit(b *testing.B) {
	_, s := newService(b)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r := req(fmt.Sprint("k", i))
		r.TenantRef, r.MaxTenantInFlight = fmt.Sprint("t", i/4000), workitem.MaxTenantInFlight
		if _, err := s.Submit(bg, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSubmitBatch128 is one SubmitWorkItems of 128 items.
func BenchmarkSubmitBatch128(b *testing.B) {
	_, s := newService(b)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r := workitem.BatchRequest{TenantRef: fmt.Sprint("t", i/30), IdempotencyKey: fmt.Sprint("k", i)}
		for range workitem.MaxBatch {
			c := req("")
			c.TenantRef, c.IdempotencyKey, c.MaxTenantInFlight = "", "", workitem.MaxTenantInFlight
			r.Requests = append(r.Requests, c)
		}
		if _, err := s.SubmitBatch(bg, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreateNode is the baseline: one CreateNodeIfAbsent the same way.
func BenchmarkCreateNode(b *testing.B) {
	l, err := fsmtest.New(nodes.Module())
	if err != nil {
		b.Fatal(err)
	}
	c := nodes.On(l)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := c.CreateIfAbsent(bg, nodes.CreateRequest{NodeID: fmt.Sprint("n", i), Labels: []string{"bench"}, Properties: map[string]any{"owner": 1}}); err != nil {
			b.Fatal(err)
		}
	}
}
