package client_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/allocation"
	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/arbiterhq/arbiter/projection"
	"github.com/arbiterhq/arbiter/workitem"
)

// wirePairs are each client type and the domain (or cluster) type whose
// JSON it mirrors: the request a route decodes, the result it answers.
var wirePairs = []struct{ client, server any }{
	{client.CreateRequest{}, nodes.CreateRequest{}},
	{client.CASRequest{}, nodes.CASRequest{}},
	{client.CreateResult{}, nodes.CreateResult{}},
	{client.CASResult{}, nodes.CASResult{}},
	{client.NodePage{}, nodes.Page{}},
	{client.ReserveRequest{}, authority.ReserveRequest{}},
	{client.ReserveNextRequest{}, authority.ReserveNextRequest{}},
	{client.TransitionRequest{}, authority.TransitionRequest{}},
	{client.ConceptRecord{}, authority.Record{}},
	{client.ConceptPage{}, authority.RecordPage{}},
	{client.Policies{}, authority.PoliciesResult{}},
	{client.PoliciesRequest{}, authority.PoliciesRequest{}},
	{client.ReserveResult{}, authority.ReserveResult{}},
	{client.TransitionResult{}, authority.TransitionResult{}},
	{client.AcquireRequest{}, capacity.AcquireRequest{}},
	{client.LeasesRequest{}, capacity.LeasesRequest{}},
	{client.CapacityReclaimRequest{}, capacity.ReclaimRequest{}},
	{client.CapacityReadRequest{}, capacity.ReadRequest{}},
	{client.UpdateCellRequest{}, capacity.UpdateCellRequest{}},
	{client.AcquireResult{}, capacity.AcquireResult{}},
	{client.LeasesResult{}, capacity.LeasesResult{}},
	{client.CapacityReclaimResult{}, capacity.ReclaimResult{}},
	{client.CellResult{}, capacity.UpdateCellResult{}},
	{client.CapacityPage{}, capacity.ReadResult{}},
	{client.SubmitRequest{}, workitem.SubmitRequest{}},
	{client.BatchRequest{}, workitem.BatchRequest{}},
	{client.ClaimRequest{}, workitem.ClaimRequest{}},
	{client.CompleteRequest{}, workitem.CompleteRequest{}},
	{client.CancelRequest{}, workitem.CancelRequest{}},
	{client.SubmitResult{}, workitem.SubmitResult{}},
	{client.BatchResult{}, workitem.BatchResult{}},
	{client.ClaimResult{}, workitem.ClaimResult{}},
	{client.ItemResult{}, workitem.ItemResult{}},
	{client.WorkItemPage{}, workitem.ListResult{}},
	{client.PutHostRequest{}, workitem.PutHostRequest{}},
	{client.TelemetryRequest{}, workitem.TelemetryRequest{}},
	{client.ProfilesRequest{}, workitem.ProfilesRequest{}},
	{client.Profiles{}, workitem.ProfilesResult{}},
	{client.HostReserveRequest{}, workitem.ReserveRequest{}},
	{client.HostReleaseRequest{}, workitem.ReleaseRequest{}},
	{client.HostReclaimRequest{}, workitem.ReclaimRequest{}},
	{client.ReservationQueryRequest{}, workitem.QueryRequest{}},
	{client.ReservationQueryResult{}, workitem.QueryResult{}},
	{client.HostPage{}, workitem.HostPage{}},
	{client.RewriteExtensionRequest{}, workitem.RewriteExtensionRequest{}},
	{client.HostResult{}, workitem.HostResult{}},
	{client.ReservationResult{}, workitem.ReservationResult{}},
	{client.ReservationReclaimResult{}, workitem.ReclaimResult{}},
	{client.PutSpaceRequest{}, allocation.PutSpaceRequest{}},
	{client.SpaceResult{}, allocation.SpaceResult{}},
	{client.SpacePage{}, allocation.SpacePage{}},
	{client.AllocationReservationPage{}, allocation.ReservationPage{}},
	{client.OccupancyPage{}, allocation.OccupancyPage{}},
	{client.DuplicatePage{}, allocation.DuplicatePage{}},
	{client.BindRequest{}, allocation.BindRequest{}},
	{client.BindResult{}, allocation.BindResult{}},
	{client.CreateTaskRequest{}, allocation.CreateTaskRequest{}},
	{client.TaskResult{}, allocation.TaskResult{}},
	{client.TaskPage{}, allocation.TaskPage{}},
	{client.TaskTransitionRequest{}, allocation.TransitionRequest{}},
	{client.SupersedeRequest{}, allocation.SupersedeRequest{}},
	{client.HoldRequest{}, allocation.HoldRequest{}},
	{client.NoteRequest{}, allocation.NoteRequest{}},
	{client.NoteResult{}, allocation.NoteResult{}},
	{client.NotePage{}, allocation.NotePage{}},
	{client.WindowRequest{}, allocation.WindowRequest{}},
	{client.WindowResult{}, allocation.WindowResult{}},
	{client.KeyReserveRequest{}, allocation.ReserveRequest{}},
	{client.AllocationReservationResult{}, allocation.ReservationResult{}},
	{client.CommitRequest{}, allocation.CommitRequest{}},
	{client.Occupancy{}, allocation.Occupancy{}},
	{client.DropResult{}, allocation.AbortResult{}},
	{client.AllocationConflict{}, allocation.Conflict{}},
	{client.ConfigRequest{}, projection.ConfigRequest{}},
	{client.ProjectionConfig{}, projection.Config{}},
	{client.TargetRequest{}, projection.TargetRequest{}},
	{client.TargetResult{}, projection.TargetResult{}},
	{client.TargetView{}, projection.TargetView{}},
	{client.ChannelSubmitRequest{}, projection.SubmitRequest{}},
	{client.ChannelSubmitResult{}, projection.SubmitResult{}},
	{client.ProjectionAcquireRequest{}, projection.AcquireRequest{}},
	{client.ProjectionLease{}, projection.Lease{}},
	{client.FenceRequest{}, projection.FenceRequest{}},
	{client.PublishResult{}, projection.PublishResult{}},
	{client.ProjectionReleaseResult{}, projection.ReleaseResult{}},
	{client.Status{}, cluster.Status{}},
	{client.Whoami{}, cluster.Whoami{}},
	{client.ChangesPage{}, fsm.ChangesPage{}},
	{client.CapabilitiesResult{}, fsm.CapabilitiesView{}}}

// ownJSON are server types that write their JSON themselves
// (MarshalJSON), with the fields they write: a scalar (nil) or an
// object whose fields the client type must have.
var ownJSON = map[reflect.Type][]string{
	reflect.TypeFor[allocation.WinnerID](): nil, // a number or a string
	reflect.TypeFor[time.Time]():           nil, // RFC 3339 text
	reflect.TypeFor[json.RawMessage]():     nil, // any JSON, as given
	// AppendJSON writes the fields encoding/json would (nodes/json.go).
	reflect.TypeFor[nodes.Record](): jsonFieldNames(reflect.TypeFor[nodes.Record]()),
	// One proposal's status and the body a create of its own would have.
	reflect.TypeFor[allocation.WindowEntry](): {"body", "proposal_id", "status"},
}

// TestWireTypesMatchTheServer: every client type has exactly the JSON
// fields of the server type it mirrors, nested types included, so a
// field added or renamed on one side fails here.
func TestWireTypesMatchTheServer(t *testing.T) {
	for _, p := range wirePairs {
		ct, st := reflect.TypeOf(p.client), reflect.TypeOf(p.server)
		compareJSON(t, ct.Name(), ct, st, map[[2]reflect.Type]bool{})
	}
}

func compareJSON(t *testing.T, path string, ct, st reflect.Type, seen map[[2]reflect.Type]bool) {
	t.Helper()
	ct, st = elem(ct), elem(st)
	if seen[[2]reflect.Type{ct, st}] {
		return
	}
	seen[[2]reflect.Type{ct, st}] = true
	if own, ok := ownJSON[st]; ok {
		if own == nil {
			return
		}
		if got := jsonFieldNames(ct); !slices.Equal(got, own) {
			t.Errorf("%s: the client type %s has fields %v; the server writes %v", path, ct, got, own)
		}
		if st != reflect.TypeFor[nodes.Record]() {
			return
		}
	} else if st.Implements(marshaler) || reflect.PointerTo(st).Implements(marshaler) {
		t.Errorf("%s: %s writes its own JSON: add it to ownJSON with the fields it writes", path, st)
		return
	}
	if (ct.Kind() == reflect.Struct) != (st.Kind() == reflect.Struct) {
		t.Errorf("%s: client %s, server %s: one is an object, the other not", path, ct, st)
		return
	}
	if st.Kind() != reflect.Struct {
		return
	}
	cf, sf := jsonFields(ct), jsonFields(st)
	for name, f := range sf {
		g, ok := cf[name]
		if !ok {
			t.Errorf("%s: the server's %s has field %q; the client's %s has not", path, st, name, ct)
			continue
		}
		compareJSON(t, path+"."+name, g, f, seen)
	}
	for name := range cf {
		if _, ok := sf[name]; !ok {
			t.Errorf("%s: the client's %s has field %q; the server's %s has not", path, ct, name, st)
		}
	}
}

var marshaler = reflect.TypeFor[interface{ MarshalJSON() ([]byte, error) }]()

// elem is the type a pointer, slice, array or map holds, all the way
// down ([]byte and json.RawMessage stay as they are).
func elem(t reflect.Type) reflect.Type {
	for {
		switch t.Kind() {
		case reflect.Pointer, reflect.Array, reflect.Map:
			t = t.Elem()
		case reflect.Slice:
			if t.Elem().Kind() == reflect.Uint8 {
				return t
			}
			t = t.Elem()
		default:
			return t
		}
	}
}

// jsonFields are the JSON fields of struct t by name, embedded structs
// without a tag flattened as encoding/json does.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	if t.Kind() != reflect.Struct {
		return out
	}
	for f := range t.Fields() {
		tag, has := f.Tag.Lookup("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" && tag == "-" {
			continue
		}
		if f.Anonymous && !has {
			for k, v := range jsonFields(elemStruct(f.Type)) {
				out[k] = v
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func elemStruct(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		return t.Elem()
	}
	return t
}

func jsonFieldNames(t reflect.Type) []string {
	var names []string
	for k := range jsonFields(t) {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

var _ = []any{authority.Record{}, capacity.Lease{}, cluster.Status{}, fsm.Event{}, projection.Lease{}, workitem.WorkItem{}}
