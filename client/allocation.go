package client

import (
	"context"
	"net/http"
	"strconv"
)

// Allocation is conflict-key allocation (/v1/spaces): the first writer
// of a conflict key (kind, target, delivery mode) in a space, tasks and
// their lifecycle, windows of proposals, reservations of keys,
// post-review notes, supersession.
//
// A loser is an *AllocationConflictError (errors.Is errs.Conflict)
// carrying the spec's flat body: Winner, Code, WriteOccurred. Creates,
// notes and windows carry an Idempotency-Key header (generated when key
// is ""): a retry with the same key answers the original body.
type Allocation struct{ c *Client }

func taskPath(slug string, id uint64, rest ...string) string {
	return pathOf(append([]string{"spaces", slug, "tasks", strconv.FormatUint(id, 10)}, rest...)...)
}

// PutSpace creates or replaces a space (controller role); its live tasks
// are rebound to the new catalog in the same command.
func (s *Allocation) PutSpace(ctx context.Context, slug string, req PutSpaceRequest) (*SpaceResult, error) {
	return do[SpaceResult](ctx, s.c, repeat(http.MethodPut, pathOf("spaces", slug), req))
}

// GetSpace returns the space; another tenant's is errs.NotFound.
func (s *Allocation) GetSpace(ctx context.Context, slug string, cons Consistency) (*SpaceResult, error) {
	return do[SpaceResult](ctx, s.c, get(pathOf("spaces", slug), params("consistency", string(cons))))
}

// ListSpaces returns one page of the caller's tenants' spaces, by slug.
func (s *Allocation) ListSpaces(ctx context.Context, p PageQuery) (*SpacePage, error) {
	return do[SpacePage](ctx, s.c, get(pathOf("spaces"), p.params()))
}

// Bind says which catalog slot a title binds to (it writes nothing).
func (s *Allocation) Bind(ctx context.Context, slug string, req BindRequest) (*BindResult, error) {
	return do[BindResult](ctx, s.c, postRead(pathOf("spaces", slug, "bind"), req))
}

// CreateTask creates a task holding its conflict key (201); a loser is
// an *AllocationConflictError naming the winner.
func (s *Allocation) CreateTask(ctx context.Context, slug string, req CreateTaskRequest, key string) (*TaskResult, error) {
	cl := post(pathOf("spaces", slug, "tasks"), req, keyOr(key))
	cl.keyHeader = true
	return do[TaskResult](ctx, s.c, cl)
}

// GetTask returns a task.
func (s *Allocation) GetTask(ctx context.Context, slug string, id uint64, cons Consistency) (*TaskResult, error) {
	return do[TaskResult](ctx, s.c, get(taskPath(slug, id), params("consistency", string(cons))))
}

// TaskQuery selects the tasks ListTasks pages through.
type TaskQuery struct {
	Status            string
	IncludeSuperseded bool
	PageQuery
}

// ListTasks returns one page (Limit 1..128) of a space's tasks.
func (s *Allocation) ListTasks(ctx context.Context, slug string, q TaskQuery) (*TaskPage, error) {
	return do[TaskPage](ctx, s.c, get(pathOf("spaces", slug, "tasks"),
		q.params("status", q.Status, "include_superseded", flag(q.IncludeSuperseded))))
}

// Transition moves a task: claim, assign, submit, review, done, reject,
// withdraw or reopen; ExpectedVersion guards against a concurrent change.
func (s *Allocation) Transition(ctx context.Context, slug string, id uint64, req TaskTransitionRequest) (*TaskResult, error) {
	return do[TaskResult](ctx, s.c, repeat(http.MethodPost, taskPath(slug, id, "transition"), req))
}

// Supersede marks a duplicate superseded by req.SurvivingTask, which
// inherits its keys (controller role).
func (s *Allocation) Supersede(ctx context.Context, slug string, id uint64, req SupersedeRequest) (*TaskResult, error) {
	return do[TaskResult](ctx, s.c, repeat(http.MethodPost, taskPath(slug, id, "supersede"), req))
}

// Hold puts (or lifts) a steward hold: the task keeps its key.
func (s *Allocation) Hold(ctx context.Context, slug string, id uint64, req HoldRequest) (*TaskResult, error) {
	return do[TaskResult](ctx, s.c, repeat(http.MethodPost, taskPath(slug, id, "hold"), req))
}

// PostNote posts a note on a criterion of a task (201), first writer per
// key; a loser is an *AllocationConflictError.
func (s *Allocation) PostNote(ctx context.Context, slug string, id uint64, req NoteRequest, key string) (*NoteResult, error) {
	cl := post(taskPath(slug, id, "notes"), req, keyOr(key))
	cl.keyHeader = true
	return do[NoteResult](ctx, s.c, cl)
}

// ListNotes returns one page of a task's notes.
func (s *Allocation) ListNotes(ctx context.Context, slug string, id uint64, p PageQuery) (*NotePage, error) {
	return do[NotePage](ctx, s.c, get(taskPath(slug, id, "notes"), p.params()))
}

// Window decides 1..128 proposals in one command, by (received_seq,
// payload digest): each entry is a 201, 409 or 422 with its body
// (WindowEntry.Task, WindowEntry.Err).
func (s *Allocation) Window(ctx context.Context, slug string, req WindowRequest, key string) (*WindowResult, error) {
	cl := post(pathOf("spaces", slug, "windows"), req, keyOr(key))
	cl.keyHeader = true
	return do[WindowResult](ctx, s.c, cl)
}

// Reserve reserves a key for a proposal (201) until it commits, aborts
// or expires; req.ProposalID identifies the request.
func (s *Allocation) Reserve(ctx context.Context, slug string, req KeyReserveRequest) (*AllocationReservationResult, error) {
	return do[AllocationReservationResult](ctx, s.c, post(pathOf("spaces", slug, "reservations"), req, req.ProposalID))
}

// Commit commits a reservation to its winner.
func (s *Allocation) Commit(ctx context.Context, slug, proposalID string, req CommitRequest) (*Occupancy, error) {
	return do[Occupancy](ctx, s.c, post(pathOf("spaces", slug, "reservations", proposalID, "commit"), req, proposalID))
}

// Abort drops a live reservation.
func (s *Allocation) Abort(ctx context.Context, slug, proposalID string) (*DropResult, error) {
	return do[DropResult](ctx, s.c, post(pathOf("spaces", slug, "reservations", proposalID, "abort"), struct{}{}, proposalID))
}

// Release drops a committed reservation.
func (s *Allocation) Release(ctx context.Context, slug, proposalID string) (*DropResult, error) {
	return do[DropResult](ctx, s.c, post(pathOf("spaces", slug, "reservations", proposalID, "release"), struct{}{}, proposalID))
}

// ListReservations returns live and committed reservations, by
// proposal id.
func (s *Allocation) ListReservations(ctx context.Context, slug string, p PageQuery) (*AllocationReservationPage, error) {
	return do[AllocationReservationPage](ctx, s.c, get(pathOf("spaces", slug, "reservations"), p.params()))
}

// Occupancy returns every key held now and its holder.
func (s *Allocation) Occupancy(ctx context.Context, slug string, p PageQuery) (*OccupancyPage, error) {
	return do[OccupancyPage](ctx, s.c, get(pathOf("spaces", slug, "occupancy"), p.params()))
}

// Duplicates returns tasks that want a key another holds, for a steward
// to supersede.
func (s *Allocation) Duplicates(ctx context.Context, slug string, p PageQuery) (*DuplicatePage, error) {
	return do[DuplicatePage](ctx, s.c, get(pathOf("spaces", slug, "duplicates"), p.params()))
}
