package cluster

import (
	"net/http"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/fsm"
)

// The concept reservation routes: the authority adapter over this node.

// concepts is the authority adapter over this node. It checks the
// caller's tenant and role itself and then reaches the raw node primitives
// as the "authority" adapter.
func (n *Node) concepts() *authority.Service {
	a := adapter{n: n, name: "authority"}
	return authority.NewService(a, a, n.cfg.ConceptPolicies)
}

// writeReserve answers 201 for a claim this call made (created or
// reclaimed) and 200 for a replay of the same request.
func writeReserve(w http.ResponseWriter, res *authority.ReserveResult) {
	status := http.StatusCreated
	if res.Replayed {
		status = http.StatusOK
	}
	writeJSON(w, status, res)
}

func (n *Node) handleConceptReserve(w http.ResponseWriter, r *http.Request) {
	var req authority.ReserveRequest
	if err := decodeJSON(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	res, err := n.concepts().Reserve(r.Context(), req)
	if err != nil {
		writeError(w, err)
		return
	}
	writeReserve(w, res)
}

func (n *Node) handleConceptReserveNext(w http.ResponseWriter, r *http.Request) {
	var req authority.ReserveNextRequest
	if err := decodeJSON(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	res, err := n.concepts().ReserveNextNumeric(r.Context(), req)
	if err != nil {
		writeError(w, err)
		return
	}
	writeReserve(w, res)
}

func (n *Node) handleConceptTransition(w http.ResponseWriter, r *http.Request) {
	var req authority.TransitionRequest
	if err := decodeJSON(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	res, err := n.concepts().Transition(r.Context(), req)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (n *Node) handleConceptGet(w http.ResponseWriter, r *http.Request) {
	p, err := queryParams(r, "concept_id", "tenant_ref")
	if err != nil {
		writeError(w, err)
		return
	}
	rec, err := n.concepts().Get(r.Context(), p["concept_id"], p["tenant_ref"])
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

func (n *Node) handleConceptList(w http.ResponseWriter, r *http.Request) {
	p, err := queryParams(r, "tenant_ref", "after", "limit")
	if err != nil {
		writeError(w, err)
		return
	}
	limit, err := intParam("limit", p["limit"], 1, fsm.MaxLabelPage)
	if err != nil {
		writeError(w, err)
		return
	}
	page, err := n.concepts().List(r.Context(), authority.ListRequest{TenantRef: p["tenant_ref"], After: p["after"], Limit: limit})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}
