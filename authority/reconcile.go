package authority

import (
	"context"
	"sort"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/nodes"
)

// MaxReconcileRecords bounds ReconcileRequest.MaxRecords.
const MaxReconcileRecords = 10_000

// ReconcileRequest compares one tenant's native claims with this
// repository's projection and with the concept ids found in its sources.
type ReconcileRequest struct {
	TenantRef string `json:"tenant_ref"`
	// MaxRecords bounds native claims, projected records and markers
	// alike (1..MaxReconcileRecords). Going over it is an error, never a
	// silently partial answer.
	MaxRecords int `json:"max_records"`
	// SourceMarkers are concept ids referenced by source files.
	SourceMarkers []string `json:"source_markers,omitempty"`
}

// Mismatch is a concept whose projection disagrees with the native claim.
type Mismatch struct {
	ConceptID      string `json:"concept_id"`
	Where          string `json:"where"` // "fragment" or "view"
	NativeState    State  `json:"native_state"`
	NativeFence    uint64 `json:"native_fence"`
	ProjectedState State  `json:"projected_state"`
	ProjectedFence uint64 `json:"projected_fence"`
}

// ReconcileReport classifies every difference; it changes nothing.
type ReconcileReport struct {
	NativeRecords        int        `json:"native_records"`
	ProjectedRecords     int        `json:"projected_records"`
	MissingProjections   []string   `json:"missing_projections"`
	OrphanRecords        []string   `json:"orphan_records"`
	StateMismatches      []Mismatch `json:"state_mismatches"`
	MarkersWithoutClaims []string   `json:"markers_without_claims"`
}

// ReconcileProjection reads the tenant's native claims page by page (each
// cursor must be new: a repeated one is refused rather than followed), the
// fragments and the view, and classifies:
//
//   - missing projections: a claim that was materialized (or went further)
//     with no fragment record of its reservation;
//   - orphan records: a projected record with no native claim of this
//     tenant, or of another reservation;
//   - state mismatches: projection and claim disagree on state or fence
//     (in a fragment, or in the view);
//   - markers without claims: a source marker with no native claim.
func (s *ConceptReservationService) ReconcileProjection(ctx context.Context, req ReconcileRequest) (*ReconcileReport, error) {
	if req.MaxRecords < 1 || req.MaxRecords > MaxReconcileRecords {
		return nil, errs.Errorf(errs.CodeInvalid, "max_records must be between 1 and %d", MaxReconcileRecords)
	}
	if len(req.SourceMarkers) > req.MaxRecords {
		return nil, errs.Errorf(errs.CodeInvalid, "%d source markers exceed max_records %d", len(req.SourceMarkers), req.MaxRecords)
	}
	native, err := s.nativeClaims(ctx, req.TenantRef, req.MaxRecords)
	if err != nil {
		return nil, err
	}
	fragments, err := s.readFragments()
	if err != nil {
		return nil, err
	}
	view, err := s.readView()
	if err != nil {
		return nil, err
	}
	if len(fragments) > req.MaxRecords || len(view) > req.MaxRecords {
		return nil, errs.Errorf(errs.CodeInvalid, "the projection holds %d fragment and %d view records, more than max_records %d", len(fragments), len(view), req.MaxRecords)
	}
	rep := &ReconcileReport{
		NativeRecords: len(native), ProjectedRecords: len(fragments),
		MissingProjections: []string{}, OrphanRecords: []string{}, StateMismatches: []Mismatch{}, MarkersWithoutClaims: []string{},
	}
	latest := merge(fragments)
	projectedBy := map[string]ProjectedRecord{}
	for _, p := range latest {
		projectedBy[p.ConceptID] = p
	}
	for _, p := range latest {
		n, ok := native[p.ConceptID]
		switch {
		case !ok || n.ReservationID != p.ReservationID:
			rep.OrphanRecords = append(rep.OrphanRecords, p.ConceptID)
		case n.State != p.State || n.Fence != p.Fence:
			rep.StateMismatches = append(rep.StateMismatches, mismatch(n, p, "fragment"))
		}
	}
	for id, n := range native { // order-free: the lists are sorted below
		if !wasMaterialized(n) {
			continue
		}
		if p, ok := projectedBy[id]; !ok || p.ReservationID != n.ReservationID {
			rep.MissingProjections = append(rep.MissingProjections, id)
		}
	}
	for _, v := range view {
		if n, ok := native[v.ConceptID]; ok && n.ReservationID == v.ReservationID && (n.State != v.State || n.Fence != v.Fence) {
			rep.StateMismatches = append(rep.StateMismatches, mismatch(n, v, "view"))
		}
	}
	for _, m := range req.SourceMarkers {
		id, err := ParseConceptID(m)
		if err != nil {
			return nil, err
		}
		if _, ok := native[id.String()]; !ok {
			rep.MarkersWithoutClaims = append(rep.MarkersWithoutClaims, id.String())
		}
	}
	sort.Strings(rep.MissingProjections)
	sort.Strings(rep.OrphanRecords)
	sort.Strings(rep.MarkersWithoutClaims)
	sort.Slice(rep.StateMismatches, func(i, j int) bool {
		a, b := rep.StateMismatches[i], rep.StateMismatches[j]
		return a.ConceptID < b.ConceptID || a.ConceptID == b.ConceptID && a.Where < b.Where
	})
	return rep, nil
}

func mismatch(n *Record, p ProjectedRecord, where string) Mismatch {
	return Mismatch{ConceptID: n.ConceptID, Where: where, NativeState: n.State, NativeFence: n.Fence, ProjectedState: p.State, ProjectedFence: p.Fence}
}

// wasMaterialized: the claim has (or had) a local projection to expect.
func wasMaterialized(r *Record) bool {
	return r.MaterializedAtMs != 0 || r.State == Materialized || r.State == Landed
}

// nativeClaims reads up to max claims of the tenant; more is an error.
func (s *ConceptReservationService) nativeClaims(ctx context.Context, tenant string, max int) (map[string]*Record, error) {
	out := map[string]*Record{}
	seen := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > max+1 { // every page but the last holds a record
			return nil, errs.New(errs.CodeInternal, "native listing did not end within its bound")
		}
		page, err := s.auth.List(ctx, ListRequest{TenantRef: tenant, After: cursor, Limit: nodes.MaxLabelPage})
		if err != nil {
			return nil, err
		}
		for _, r := range page.Records {
			out[r.ConceptID] = r
		}
		if len(out) > max {
			return nil, errs.Errorf(errs.CodeInvalid, "tenant has more than max_records %d claims", max)
		}
		if page.NextCursor == "" {
			return out, nil
		}
		if seen[page.NextCursor] {
			return nil, errs.New(errs.CodeInternal, "native listing repeated a cursor")
		}
		seen[page.NextCursor] = true
		cursor = page.NextCursor
	}
}
