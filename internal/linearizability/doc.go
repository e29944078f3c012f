// Package linearizability checks histories of concurrent calls against
// sequential models with porcupine (github.com/anishathalye/porcupine).
//
// A test records what its clients did in a History, then hands it to Check
// with the model of the operations it exercised:
//
//	h := linearizability.NewHistory()
//	// in each client goroutine:
//	op := h.Call(client, linearizability.NodeInput{Kind: linearizability.NodeGet, ID: "a"})
//	node, err := nodes.Get(ctx, "a", fsm.Linearizable)
//	switch {
//	case err == nil:
//		op.Return(linearizability.NodeOutput{Owner: ..., Fence: ..., Version: node.Version})
//	case errors.Is(err, errs.NotFound):
//		op.Return(linearizability.NodeOutput{NotFound: true})
//	default:
//		op.Fail(err, false) // a read: dropped
//	}
//	// after every client has stopped:
//	linearizability.Check(t, linearizability.NodesModel(), h, 10*time.Second)
//
// Outcomes. A call that returned a decided result (including a domain
// failure such as not_found) is recorded with that output. A call that
// failed is handed to Op.Fail, which decides from the error and from
// whether the call could change state:
//
//   - a failed read is dropped: it changed nothing and reported nothing;
//   - a failed write whose error says it was certainly not applied
//     (errs.Unavailable without OutcomeUnknown) is dropped too;
//   - any other failed write may or may not have been applied. It stays in
//     the history, pending until the end (Return = math.MaxInt64), with the
//     UnknownOutput. Every model must accept UnknownOutput unconditionally
//     and take the step as if the write had been applied; linearizing it
//     after every other operation stands for "never applied".
//
// Check fails the test on Illegal and on Unknown (a checker timeout proves
// nothing) and then writes porcupine's HTML visualization to a file under
// os.TempDir whose path it logs.
//
// Adding a model. Write a porcupine.Model whose inputs and outputs are plain
// comparable structs, whose Step starts with IsUnknown(output), and whose
// Partition/PartitionEvent come from PartitionBy over the key that separates
// independent objects (an id). NodesModel in nodes_model.go is the example;
// nodes_model_test.go shows how to test a model on hand-written histories,
// legal and illegal, before trusting it with a real one.
package linearizability
