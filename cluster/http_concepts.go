package cluster

import (
	"net/http"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/nodes"
)

// The concept reservation routes: the authority adapter over this node.

// concepts is the authority adapter over this node. It checks the
// caller's tenant and role itself and then reaches the raw node primitives
// as the "authority" adapter.
func (n *Node) concepts() *authority.Service {
	a := adapter{n: n, name: "authority"}
	return authority.NewService(a, a, n.cfg.ConceptPolicies)
}

// reserveStatus is 201 for a claim this call made (created or reclaimed)
// and 200 for a replay of the same request.
func reserveStatus(res *authority.ReserveResult) int {
	if res.Replayed {
		return http.StatusOK
	}
	return http.StatusCreated
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
	limit, err := intParam("limit", p["limit"], 1, nodes.MaxLabelPage)
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
