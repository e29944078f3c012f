package workitem_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/workitem"
)

// Hosts pages the shared hosts in host_id order, each with its use,
// what is free and its telemetry age, at most Limit a page (0: 128),
// until a page without next_cursor. Any reader of the tenant named reads
// them (hosts are every tenant's, as a query's hosts section); a
// principal outside it is not_found; a limit outside 1..128 or a cursor
// of another tenant is invalid.
func TestListHosts(t *testing.T) {
	_, s := newEnabled(t)
	setup(t, s) // h1 (zone a) and h2 (zone b), with telemetry
	for _, id := range []string{"h5", "h3", "h4"} {
		_, err := s.PutHost(as(fleet), workitem.PutHostRequest{HostID: id, Labels: map[string]string{"zone": "c"},
			Capacity: workitem.Dimensions{CPUMillis: 1000, MemoryMiB: 1024, DiskMiB: 1024, Processes: 1}})
		noErr(t, "host "+id, err)
	}
	c := claimed(t, s, "i1", baseExt(), time.Minute)
	_, err := s.Reserve(as(member), reserveOf(c, "h2"))
	noErr(t, "reserve", err)

	var got []workitem.HostStatus
	cursor := ""
	for pages := 0; ; pages++ {
		if pages == 3 {
			t.Fatalf("more than 3 pages of 2 for 5 hosts: %v", got)
		}
		page, err := s.Hosts(as(reader), workitem.HostsRequest{TenantRef: "t", Limit: 2, After: cursor}, fsm.Linearizable)
		noErr(t, "hosts", err)
		if len(page.Hosts) > 2 || page.NowMs == 0 {
			t.Fatalf("page %d: %d hosts (limit 2), now %d", pages, len(page.Hosts), page.NowMs)
		}
		got = append(got, page.Hosts...)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	var ids []string
	for _, h := range got {
		ids = append(ids, h.HostID)
	}
	if !slices.Equal(ids, []string{"h1", "h2", "h3", "h4", "h5"}) {
		t.Fatalf("hosts %v, want h1..h5 in order", ids)
	}
	h2 := got[1]
	if h2.Used.CPUMillis != 1000 || h2.Free.CPUMillis != 7000 || h2.Labels["zone"] != "b" || h2.TelemetryAgeMs < 0 {
		t.Fatalf("h2: %+v", h2)
	}
	if h3 := got[2]; h3.TelemetryAgeMs != -1 || h3.Labels["zone"] != "c" {
		t.Fatalf("h3 never reported: %+v", h3)
	}

	all, err := s.Hosts(as(fleet), workitem.HostsRequest{TenantRef: "t"}, fsm.Stale)
	noErr(t, "hosts, default limit", err)
	if len(all.Hosts) != 5 || all.NextCursor != "" {
		t.Fatalf("one page of the default limit: %d hosts, next %q", len(all.Hosts), all.NextCursor)
	}

	first, err := s.Hosts(as(reader), workitem.HostsRequest{TenantRef: "t", Limit: 1}, fsm.Linearizable)
	noErr(t, "first page", err)
	q, err := s.Query(as(reader), workitem.QueryRequest{TenantRef: "t", MaxCount: 1}, fsm.Linearizable)
	noErr(t, "query", err)
	queryCursor := q.NextCursor
	for _, tc := range []struct {
		name string
		who  identity.Principal
		req  workitem.HostsRequest
		code errs.Code
	}{
		{"a principal of another tenant", outsider, workitem.HostsRequest{TenantRef: "t"}, errs.CodeNotFound},
		{"no tenant", reader, workitem.HostsRequest{}, errs.CodeInvalid},
		{"limit above the page bound", reader, workitem.HostsRequest{TenantRef: "t", Limit: workitem.MaxQueryPage + 1}, errs.CodeInvalid},
		{"a negative limit", reader, workitem.HostsRequest{TenantRef: "t", Limit: -1}, errs.CodeInvalid},
		{"a cursor of another tenant", fleet, workitem.HostsRequest{TenantRef: "u", After: first.NextCursor}, errs.CodeInvalid},
		{"a query's cursor", reader, workitem.HostsRequest{TenantRef: "t", After: queryCursor}, errs.CodeInvalid},
		{"a cursor that is not one", reader, workitem.HostsRequest{TenantRef: "t", After: "hosts.xyz"}, errs.CodeInvalid},
	} {
		_, err := s.Hosts(as(tc.who), tc.req, fsm.Linearizable)
		if e := errs.From(err); e == nil || e.Code != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		} else if field := e.Detail["field"]; tc.code == errs.CodeInvalid && field == nil {
			t.Errorf("%s: %v names no field", tc.name, err)
		}
	}
}

// A page never holds more than MaxQueryPage hosts, and paging reads each
// host once, up to MaxHosts.
func TestListHostsBound(t *testing.T) {
	_, s := newEnabled(t)
	for i := range workitem.MaxHosts {
		_, err := s.PutHost(as(fleet), workitem.PutHostRequest{HostID: fmt.Sprintf("h%03d", i),
			Capacity: workitem.Dimensions{CPUMillis: 1}})
		noErr(t, "host", err)
	}
	seen := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > workitem.MaxHosts/7+1 {
			t.Fatalf("paging does not end after %d pages", pages)
		}
		page, err := s.Hosts(as(reader), workitem.HostsRequest{TenantRef: "t", Limit: 7, After: cursor}, fsm.Linearizable)
		noErr(t, "hosts", err)
		for _, h := range page.Hosts {
			if seen[h.HostID] {
				t.Fatalf("%s twice", h.HostID)
			}
			seen[h.HostID] = true
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if len(seen) != workitem.MaxHosts {
		t.Fatalf("%d hosts read, want %d", len(seen), workitem.MaxHosts)
	}
}
