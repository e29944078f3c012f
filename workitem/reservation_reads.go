package workitem

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
)

// queryCmd is the payload of QueryReservations.
type queryCmd struct {
	TenantRef  string `msgpack:"tenant_ref"`
	WorkItemID string `msgpack:"work_item_id"`
	HostID     string `msgpack:"host_id"`
	MaxCount   int    `msgpack:"max_count"`
	Cursor     string `msgpack:"cursor"`
}

func (q *queryCmd) validate() error {
	if err := ident("tenant_ref", q.TenantRef); err != nil {
		return err
	}
	if err := optionalIdent("work_item_id", q.WorkItemID); err != nil {
		return err
	}
	if err := optionalOpaque("host_id", q.HostID); err != nil {
		return err
	}
	if q.MaxCount < 1 || q.MaxCount > MaxQueryPage {
		return fieldErr("max_count", "must be between 1 and %d, not %d", MaxQueryPage, q.MaxCount)
	}
	if len(q.Cursor) > maxResCursorLen {
		return fieldErr("cursor", "longer than %d bytes", maxResCursorLen)
	}
	return nil
}

// The sections of a query page, in order.
const (
	sectionReservations = iota
	sectionHosts
	sectionFairness
)

// queryPos is a query cursor's position: the section, and the last row
// of it the previous page returned (a reservation's index, a host id,
// a fairness profile and group).
type queryPos struct {
	Section int    `msgpack:"section"`
	Index   uint64 `msgpack:"index"`
	A       string `msgpack:"a"`
	B       string `msgpack:"b"`
}

// runQuery pages the native status: the tenant's reservations (active
// and recently ended; of one item and/or one host if asked), then the
// hosts (or the one asked), then the tenant's fairness debts, at most
// max_count rows a page across the three. Readers of the tenant only;
// anyone else gets not_found. It reads whatever the profiles' modes.
func runQuery(rt *fsm.ReadTx, payload []byte) (any, error) {
	var q queryCmd
	if err := fsm.DecodePayload(payload, &q); err != nil {
		return nil, err
	}
	if err := q.validate(); err != nil {
		return nil, err
	}
	if err := checkReader(rt.Principal, q.TenantRef); err != nil {
		return nil, err
	}
	bind := q.TenantRef + "\x00" + q.WorkItemID + "\x00" + q.HostID
	var pos *queryPos
	if q.Cursor != "" {
		pos = new(queryPos)
		if err := decodeResCursor("query", bind, q.Cursor, pos); err != nil {
			return nil, err
		}
		if pos.Section < sectionReservations || pos.Section > sectionFairness {
			return nil, fieldErr("cursor", "was not issued for this query")
		}
	}
	res := &QueryResult{Reservations: []Reservation{}, Hosts: []HostStatus{}, Fairness: []Debt{}, NowMs: rt.Now}
	p := &pager{limit: q.MaxCount}
	for section, list := range []func(*pager, *queryPos) error{
		func(p *pager, after *queryPos) error { return queryReservations(rt, &q, res, p, after) },
		func(p *pager, after *queryPos) error { return queryHosts(rt, &q, res, p, after) },
		func(p *pager, after *queryPos) error { return queryFairness(rt, &q, res, p, after) },
	} {
		if pos != nil && section < pos.Section {
			continue
		}
		var after *queryPos
		if pos != nil && section == pos.Section {
			after = pos
		}
		if err := list(p, after); err != nil {
			return nil, err
		}
		if p.next != nil {
			res.NextCursor = encodeResCursor("query", bind, p.next)
			break
		}
	}
	return res, nil
}

// pager counts a page's rows: add reports false once the page is full,
// and then next is the position of its last row.
type pager struct {
	limit, n int
	last     queryPos
	next     *queryPos
}

func (p *pager) add(pos queryPos) bool {
	if p.n == p.limit {
		last := p.last
		p.next = &last
		return false
	}
	p.n++
	p.last = pos
	return true
}

func queryReservations(rt *fsm.ReadTx, q *queryCmd, res *QueryResult, p *pager, after *queryPos) error {
	var from uint64
	if after != nil {
		from = after.Index + 1
	}
	index, args := "tenant", []any{q.TenantRef, from}
	switch {
	case q.WorkItemID != "":
		index, args = "item", []any{q.TenantRef, q.WorkItemID, from}
	case q.HostID != "":
		index, args = "host", []any{q.TenantRef, q.HostID, from}
	}
	it, err := rt.Txn.LowerBound(tableReservations, index, args...)
	if err != nil {
		return internal("scan reservations", err)
	}
	scanned := 0
	for raw := it.Next(); raw != nil; raw = it.Next() {
		r := raw.(*Reservation)
		if r.TenantRef != q.TenantRef || (q.WorkItemID != "" && r.WorkItemID != q.WorkItemID) || (index == "host" && r.HostID != q.HostID) {
			break
		}
		if scanned++; scanned > MaxScanRows {
			return errs.Errorf(errs.CodeBackpressure, "passed over %d reservations of other hosts; page by work item or host alone", MaxScanRows)
		}
		if q.HostID != "" && r.HostID != q.HostID {
			continue // an item's reservations on other hosts
		}
		if !p.add(queryPos{Section: sectionReservations, Index: r.Index}) {
			return nil
		}
		res.Reservations = append(res.Reservations, *r)
	}
	return nil
}

func queryHosts(rt *fsm.ReadTx, q *queryCmd, res *QueryResult, p *pager, after *queryPos) error {
	var list []*Host
	if q.HostID != "" {
		h, err := getHost(rt.Txn, q.HostID)
		if err != nil {
			return err
		}
		if h != nil && after == nil {
			list = []*Host{h}
		}
	} else {
		all, err := hosts(rt.Txn)
		if err != nil {
			return err
		}
		for _, h := range all {
			if after == nil || h.HostID > after.A {
				list = append(list, h)
			}
		}
	}
	for _, h := range list {
		if !p.add(queryPos{Section: sectionHosts, A: h.HostID}) {
			return nil
		}
		res.Hosts = append(res.Hosts, hostStatus(h, rt.Now))
	}
	return nil
}

func queryFairness(rt *fsm.ReadTx, q *queryCmd, res *QueryResult, p *pager, after *queryPos) error {
	args := []any{q.TenantRef, "", ""}
	if after != nil {
		args = []any{q.TenantRef, after.A, after.B}
	}
	it, err := rt.Txn.LowerBound(tableFairness, "id", args...)
	if err != nil {
		return internal("scan fairness debts", err)
	}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		d := raw.(*debtRow)
		if d.TenantRef != q.TenantRef {
			break
		}
		if after != nil && d.Profile == after.A && d.Group == after.B {
			continue
		}
		if !p.add(queryPos{Section: sectionFairness, A: d.Profile, B: d.Group}) {
			return nil
		}
		res.Fairness = append(res.Fairness, debtOf(d, rt.Now))
	}
	return nil
}

// hostsCmd is the payload of QueryHosts.
type hostsCmd struct {
	TenantRef string `msgpack:"tenant_ref"`
	After     string `msgpack:"after"`
	Limit     int    `msgpack:"limit"`
}

func (q *hostsCmd) validate() error {
	if err := ident("tenant_ref", q.TenantRef); err != nil {
		return err
	}
	if q.Limit < 1 || q.Limit > MaxQueryPage {
		return fieldErr("limit", "must be between 1 and %d, not %d", MaxQueryPage, q.Limit)
	}
	if len(q.After) > maxResCursorLen {
		return fieldErr("after", "cursor longer than %d bytes", maxResCursorLen)
	}
	return nil
}

// hostsPos is a hosts cursor's position: the last host_id a page gave.
type hostsPos struct {
	HostID string `msgpack:"host_id"`
}

// runHosts pages the shared hosts in host_id order from the id index:
// at most limit rows read, plus one to know whether a page follows.
// Readers of the tenant named only (hosts are every tenant's, as in
// runQuery); anyone else gets not_found. The cursor is bound to the
// tenant.
func runHosts(rt *fsm.ReadTx, payload []byte) (any, error) {
	var q hostsCmd
	if err := fsm.DecodePayload(payload, &q); err != nil {
		return nil, err
	}
	if err := q.validate(); err != nil {
		return nil, err
	}
	if err := checkReader(rt.Principal, q.TenantRef); err != nil {
		return nil, err
	}
	var after hostsPos
	if q.After != "" {
		if decodeResCursor("hosts", q.TenantRef, q.After, &after) != nil {
			return nil, fieldErr("after", "cursor was not issued for this tenant's hosts")
		}
	}
	it, err := rt.Txn.LowerBound(tableHosts, "id", after.HostID)
	if err != nil {
		return nil, internal("scan hosts", err)
	}
	res := &HostPage{Hosts: []HostStatus{}, NowMs: rt.Now}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		h := raw.(*Host)
		if q.After != "" && h.HostID == after.HostID {
			continue // the previous page's last host (a host id is never "")
		}
		if len(res.Hosts) == q.Limit {
			res.NextCursor = encodeResCursor("hosts", q.TenantRef, hostsPos{HostID: res.Hosts[len(res.Hosts)-1].HostID})
			break
		}
		res.Hosts = append(res.Hosts, hostStatus(h, rt.Now))
	}
	return res, nil
}

// hostStatus is h with what is free and its telemetry's age at now (-1:
// it never reported).
func hostStatus(h *Host, now int64) HostStatus {
	age := int64(-1)
	if h.Telemetry.ReportedAtMs != 0 {
		age = now - h.Telemetry.ReportedAtMs
	}
	return HostStatus{Host: *h, Free: h.Capacity.Sub(h.Used), TelemetryAgeMs: age}
}
