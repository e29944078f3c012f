package authority

import (
	"context"
	"errors"
	"strings"
	"unicode"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/arbiterhq/arbiter/nodes"
)

// read returns the record of id as the tenant sees it: a claim of another
// tenant is not found, so that errors do not reveal it.
func (s *Service) read(ctx context.Context, id ConceptID, tenantRef string) (*Record, error) {
	rec, _, err := s.readWritten(ctx, id, tenantRef)
	return rec, err
}

// readWritten is read, with the log index of the claim's last write.
func (s *Service) readWritten(ctx context.Context, id ConceptID, tenantRef string) (*Record, uint64, error) {
	node, err := s.nodes.Get(ctx, id.NodeID(), fsm.Linearizable)
	if errors.Is(err, errs.NotFound) {
		return nil, 0, errs.Errorf(errs.CodeNotFound, "no reservation of %s", id)
	}
	if err != nil {
		return nil, 0, fromCluster(err)
	}
	rec, err := recordOf(node)
	if err != nil {
		return nil, 0, err
	}
	if tenantRef != "" && rec.TenantRef != tenantRef {
		return nil, 0, errs.Errorf(errs.CodeNotFound, "no reservation of %s", id)
	}
	return rec, node.ModifiedIndex, nil
}

// Get reads one claim, linearizably. With a tenant ref, a claim of another
// tenant is not found.
func (s *Service) Get(ctx context.Context, conceptID, tenantRef string) (*Record, error) {
	id, err := ParseConceptID(conceptID)
	if err != nil {
		return nil, err
	}
	if err := bounds.OptionalIdentifier("tenant_ref", tenantRef); err != nil {
		return nil, err
	}
	p, _ := fsm.PrincipalFrom(ctx)
	if !p.Trusted() {
		// An external caller reads only its own tenant's claims.
		if tenantRef == "" && len(p.Tenants) == 1 && p.Tenants[0] != "*" {
			tenantRef = p.Tenants[0]
		}
		if tenantRef == "" {
			return nil, errs.New(errs.CodeInvalid, "tenant_ref is required")
		}
		if _, err := authorize(ctx, identity.RoleReader, tenantRef); err != nil {
			return nil, err
		}
	}
	return s.read(ctx, id, tenantRef)
}

// ListRequest pages through one tenant's claims in concept id order (as
// node ids sort: by namespace, then by the digits as text).
type ListRequest struct {
	TenantRef string `json:"tenant_ref"`
	After     string `json:"after,omitempty"`
	Limit     int    `json:"limit,omitempty"`
}

// RecordPage is one page; NextCursor is empty on the last page.
type RecordPage struct {
	Records    []*Record `json:"records"`
	NextCursor string    `json:"next_cursor"`
}

// List reads one page of a tenant's claims. It does not trust the backend
// to page correctly: every returned cursor is checked for size and
// control characters, each page must stay within the limit and move
// strictly past the previous one, so a backend that ignored the cursor
// could not make a caller loop forever.
func (s *Service) List(ctx context.Context, req ListRequest) (*RecordPage, error) {
	if err := bounds.Identifier("tenant_ref", req.TenantRef); err != nil {
		return nil, err
	}
	if _, err := authorize(ctx, identity.RoleReader, req.TenantRef); err != nil {
		return nil, err
	}
	if req.Limit < 0 || req.Limit > nodes.MaxLabelPage {
		return nil, errs.Errorf(errs.CodeInvalid, "limit must be between 1 and %d", nodes.MaxLabelPage)
	}
	if err := checkCursor(req.After); err != nil {
		return nil, err
	}
	page, err := s.nodes.ByLabel(ctx, nodes.LabelQuery{Label: tenantLabel(req.TenantRef), After: req.After, Limit: req.Limit}, fsm.Linearizable)
	if err != nil {
		return nil, fromCluster(err)
	}
	limit := req.Limit
	if limit == 0 {
		limit = nodes.MaxLabelPage
	}
	if len(page.Nodes) > limit {
		return nil, errs.Errorf(errs.CodeInternal, "backend returned %d records for a page of %d", len(page.Nodes), limit)
	}
	if page.NextCursor != "" && (page.NextCursor == req.After || len(page.Nodes) == 0) {
		return nil, errs.New(errs.CodeInternal, "backend cursor did not progress")
	}
	if err := checkCursor(page.NextCursor); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "backend returned a bad cursor: %v", err)
	}
	out := &RecordPage{Records: []*Record{}, NextCursor: page.NextCursor}
	prev := ""
	for i := range page.Nodes {
		n := &page.Nodes[i]
		if n.NodeID <= prev {
			return nil, errs.New(errs.CodeInternal, "backend page is not in strictly increasing order")
		}
		prev = n.NodeID
		rec, err := recordOf(n)
		if err != nil {
			return nil, err
		}
		if rec.TenantRef == req.TenantRef {
			out.Records = append(out.Records, rec)
		}
	}
	return out, nil
}

// maxCursorLen bounds a cursor passed through this package.
const maxCursorLen = 1024

func checkCursor(c string) error {
	if len(c) > maxCursorLen || strings.IndexFunc(c, unicode.IsControl) >= 0 {
		return errs.Errorf(errs.CodeInvalid, "cursor is longer than %d bytes or holds control characters", maxCursorLen)
	}
	return nil
}
