package mcptools

import (
	"context"

	"github.com/arbiterhq/arbiter/client"
)

// Allocation: conflict-key allocation in a space (the allocation spec).
// The path parameters of the API ({slug}, {id}) are input properties,
// named space and task_id; the Idempotency-Key header is idempotency_key.

type spaceRef struct {
	Space string `json:"space" jsonschema:"the space's slug"`
}

type taskRef struct {
	Space  string `json:"space" jsonschema:"the space's slug"`
	TaskID uint64 `json:"task_id" jsonschema:"the task's id"`
}

type bindInput struct {
	spaceRef
	client.BindRequest
}

type createTaskInput struct {
	spaceRef
	client.CreateTaskRequest
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"the same key again answers the first create's result (201 or 409) instead of deciding anew: set it, and reuse it to retry after a lost answer"`
}

type transitionTaskInput struct {
	taskRef
	client.TaskTransitionRequest
}

type noteInput struct {
	taskRef
	client.NoteRequest
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"the same key again answers the first post's result"`
}

type supersedeInput struct {
	taskRef
	client.SupersedeRequest
}

type listTasksInput struct {
	spaceRef
	Status            string `json:"status,omitempty" jsonschema:"only tasks in this status (open, claimed, assigned, in_review, done, rejected, withdrawn, superseded)"`
	IncludeSuperseded bool   `json:"include_superseded,omitempty" jsonschema:"also list superseded tasks"`
	After             string `json:"after,omitempty" jsonschema:"the next_cursor of the previous page"`
	Limit             int    `json:"limit,omitempty" jsonschema:"at most this many tasks (1..128; default the server's)"`
}

// Renames of the API's parameters.
var (
	inSpace      = map[string]string{"slug": "space"}
	inSpaceKeyed = map[string]string{"slug": "space", "Idempotency-Key": "idempotency_key"}
	inTask       = map[string]string{"slug": "space", "id": "task_id"}
	inTaskKeyed  = map[string]string{"slug": "space", "id": "task_id", "Idempotency-Key": "idempotency_key"}
	linearizable = []string{"consistency"} // reads ask for it; not an input
)

func (r *registrar) allocation() {
	const d = "allocation"
	add(r, tool{name: "allocation_bind", domain: d, readOnly: true, op: "post_v1_spaces_slug_bind", rename: inSpace,
		required:    []string{"space", "title"},
		description: "Explain which catalog slot (work item) a task title binds to in a space, with each slot's score, writing nothing. Use it before allocation_create_task to see which conflict key a title would take."},
		func(ctx context.Context, c *client.Client, in bindInput) (any, error) {
			return c.Allocation().Bind(ctx, in.Space, in.BindRequest)
		})
	add(r, tool{name: "allocation_create_task", domain: d, commands: []string{"allocation_create_task"},
		op: "post_v1_spaces_slug_tasks", rename: inSpaceKeyed,
		required:    []string{"space", "title", "delivery_mode"},
		description: "Create a task in a space, taking its conflict key (kind, target slot, delivery mode): the first writer of a key wins. Success is the API's 201 body {\"task\":{...}} with status open. A loser gets an error result with the flat 409 body: error allocation_conflict, code conflict_key_occupied or conflict_key_reserved, winner {type, id} naming who holds the key, write_occurred false: do not retry, coordinate with the winner. An empty title or unknown delivery_mode is a 422 invalid. Pass idempotency_key to make retries safe."},
		func(ctx context.Context, c *client.Client, in createTaskInput) (any, error) {
			return c.Allocation().CreateTask(ctx, in.Space, in.CreateTaskRequest, in.IdempotencyKey)
		})
	add(r, tool{name: "allocation_transition_task", domain: d, commands: []string{"allocation_transition"},
		op: "post_v1_spaces_slug_tasks_id_transition", rename: inTask,
		required:    []string{"space", "task_id", "action"},
		description: "Move a task through its lifecycle: action claim, assign (with assignee), submit, review, done, reject, withdraw or reopen. Pass expected_version (the task's version you read) so that a concurrent change is refused (conflict) instead of overwritten."},
		func(ctx context.Context, c *client.Client, in transitionTaskInput) (any, error) {
			return c.Allocation().Transition(ctx, in.Space, in.TaskID, in.TaskTransitionRequest)
		})
	add(r, tool{name: "allocation_post_note", domain: d, commands: []string{"allocation_post_note"},
		op: "post_v1_spaces_slug_tasks_id_notes", rename: inTaskKeyed,
		required:    []string{"space", "task_id", "kind", "criterion_index", "body", "delivery_mode"},
		description: "Post a note (e.g. kind post_review_note) on a criterion of a task; the first writer per (task, criterion, delivery mode) wins, a later one gets the flat allocation_conflict naming the winner."},
		func(ctx context.Context, c *client.Client, in noteInput) (any, error) {
			return c.Allocation().PostNote(ctx, in.Space, in.TaskID, in.NoteRequest, in.IdempotencyKey)
		})
	add(r, tool{name: "allocation_supersede_task", domain: d, commands: []string{"allocation_supersede"},
		op: "post_v1_spaces_slug_tasks_id_supersede", rename: inTask,
		required:    []string{"space", "task_id", "surviving_task", "reason"},
		description: "Mark task_id a duplicate superseded by surviving_task, which inherits its conflict keys (controller role)."},
		func(ctx context.Context, c *client.Client, in supersedeInput) (any, error) {
			return c.Allocation().Supersede(ctx, in.Space, in.TaskID, in.SupersedeRequest)
		})
	add(r, tool{name: "allocation_list_tasks", domain: d, readOnly: true, op: "get_v1_spaces_slug_tasks", rename: inSpace,
		fills: linearizable, required: []string{"space"},
		description: "List one page of a space's tasks by id (with each task's status, conflict key and version); pass next_cursor as after for the next page."},
		func(ctx context.Context, c *client.Client, in listTasksInput) (any, error) {
			return c.Allocation().ListTasks(ctx, in.Space, client.TaskQuery{Status: in.Status, IncludeSuperseded: in.IncludeSuperseded,
				PageQuery: client.PageQuery{After: in.After, Limit: in.Limit}})
		})
}
