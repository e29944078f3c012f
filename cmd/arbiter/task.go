package main

import (
	"context"

	"github.com/arbiterhq/arbiter/client"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// `arbiter task`: the tasks of an allocation space
// (/v1/spaces/{slug}/tasks) and their notes.

func (a *app) taskCommand() *cobra.Command {
	return group("task", "allocation tasks: create, get, list, transition, supersede, hold, notes; bind a title",
		`task speaks the task routes of an allocation space (/v1/spaces/{slug}/tasks):

  task create               create a task, first writer of its conflict key
  task get | list           one task, or a space's tasks a page at a time
  task transition           claim, assign, submit, review, done, reject, withdraw or reopen
  task supersede            mark a duplicate superseded by a surviving task (controller)
  task hold                 put or lift a steward hold (controller)
  task note | notes         post a note on a criterion of a task; list a task's notes
  task bind                 which catalog slot a title binds to (writes nothing)

Every command names the space with --space, and a task with --id. Answers
print as JSON (-o table for a table). A loser prints the spec's flat conflict
body ({"error":"allocation_conflict", "winner": ...}) and exits 3; a request
the cluster finds invalid exits 2.`,
		a.taskCreateCommand(), a.taskGetCommand(), a.taskListCommand(), a.taskTransitionCommand(),
		a.taskSupersedeCommand(), a.taskHoldCommand(), a.taskNoteCommand(), a.taskNotesCommand(), a.taskBindCommand())
}

// taskIDFlag registers the required --id.
func taskIDFlag(cmd *cobra.Command) *uint64 {
	id := cmd.Flags().Uint64("id", 0, "the task's id (required)")
	_ = cmd.MarkFlagRequired("id")
	return id
}

// bodyOr fills req from --filename when given, else with fill (the field
// flags).
func (a *app) bodyOr(fs *pflag.FlagSet, body string, req any, fill func() error) error {
	if body != "" {
		return a.readBody(fs, body, req)
	}
	return fill()
}

func (a *app) taskCreateCommand() *cobra.Command {
	cmd, o := a.apiCommand("create --space SLUG --title T --delivery-mode M [--work-item W] [--idempotency-key K]",
		"create a task holding its conflict key",
		`create asks for the conflict key the title binds to (or --work-item's slot) and
prints 201 {task}. A key another holds: the spec's flat conflict body naming
the winner, and exit 3. --idempotency-key makes a retry answer the original
task; without one the command makes a key and, if the outcome is unknown,
prints "retry with: --idempotency-key K" on stderr. --filename gives the whole
body ({title, delivery_mode, work_item_id?}) instead of the field flags.

  arbiter task create --space mar --title "Comparative survey" --delivery-mode result`, nil)
	slug := spaceFlag(cmd)
	fs := cmd.Flags()
	title := fs.String("title", "", "the title")
	mode := fs.String("delivery-mode", "", "the delivery mode")
	workItem := fs.String("work-item", "", "work_item_id: the catalog slot, instead of binding the title")
	markBody(fs, "title", "delivery-mode", "work-item")
	key := keyFlag(fs, "idempotency-key", "the create's Idempotency-Key (default: a new key, printed on an unknown outcome)")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.CreateTaskRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if *title == "" || *mode == "" {
				return usageErrorf("--title and --delivery-mode are required (or --filename)")
			}
			req = client.CreateTaskRequest{Title: *title, DeliveryMode: *mode, WorkItemID: optionalString(fs, "work-item", *workItem)}
			return nil
		}); err != nil {
			return err
		}
		k := key.get()
		return key.advise(a, a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Allocation().CreateTask(ctx, *slug, req, k)
		}))
	}
	return cmd
}

func (a *app) taskGetCommand() *cobra.Command {
	cmd, o := a.apiCommand("get --space SLUG --id N", "read a task", "get prints {task}.", nil)
	slug := spaceFlag(cmd)
	id := taskIDFlag(cmd)
	stale := staleFlag(cmd.Flags())
	cmd.RunE = func(*cobra.Command, []string) error {
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Allocation().GetTask(ctx, *slug, *id, consistencyOf(stale))
		})
	}
	return cmd
}

func (a *app) taskListCommand() *cobra.Command {
	cmd, o := a.apiCommand("list --space SLUG [--status S] [--include-superseded] [--after CURSOR] [--limit N]",
		"a space's tasks, a page at a time",
		"list prints one page {tasks, next_cursor}; --after takes the next_cursor. Superseded tasks are left out unless asked.", nil)
	slug := spaceFlag(cmd)
	fs := cmd.Flags()
	status := fs.String("status", "", "only tasks of this status (open, claimed, assigned, in_review, done, ...)")
	incl := fs.Bool("include-superseded", false, "include superseded tasks")
	p := addPageFlags(fs, true)
	cmd.RunE = func(*cobra.Command, []string) error {
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Allocation().ListTasks(ctx, *slug, client.TaskQuery{Status: *status, IncludeSuperseded: *incl, PageQuery: p.query()})
		})
	}
	return cmd
}

func (a *app) taskTransitionCommand() *cobra.Command {
	cmd, o := a.apiCommand("transition --space SLUG --id N --action A [--expected-version V] [--assignee P]",
		"move a task: claim, assign, submit, review, done, reject, withdraw or reopen",
		`transition moves a task and prints {task}. --expected-version guards against
a concurrent change (another version: conflict, exit 3). A reopen of a key
another live task holds is the flat conflict (exit 3). --filename gives the whole
body instead of the field flags.`, nil)
	slug := spaceFlag(cmd)
	id := taskIDFlag(cmd)
	fs := cmd.Flags()
	action := fs.String("action", "", "claim, assign, submit, review, done, reject, withdraw or reopen")
	expected := fs.Uint64("expected-version", 0, "move it only from this version")
	assignee := fs.String("assignee", "", "the assignee (assign)")
	markBody(fs, "action", "expected-version", "assignee")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.TaskTransitionRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if *action == "" {
				return usageErrorf("--action is required (or --filename)")
			}
			req = client.TaskTransitionRequest{Action: *action, ExpectedVersion: optionalUint(fs, "expected-version", *expected), Assignee: *assignee}
			return nil
		}); err != nil {
			return err
		}
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Allocation().Transition(ctx, *slug, *id, req)
		})
	}
	return cmd
}

func (a *app) taskSupersedeCommand() *cobra.Command {
	cmd, o := a.apiCommand("supersede --space SLUG --id N --surviving-task M --reason R",
		"mark a duplicate superseded by a surviving task (controller role)",
		`supersede marks task --id superseded by --surviving-task, which inherits its
keys, and prints {task}. --filename gives the whole body instead of the field flags.`, nil)
	slug := spaceFlag(cmd)
	id := taskIDFlag(cmd)
	fs := cmd.Flags()
	survivor := fs.Uint64("surviving-task", 0, "the task that survives")
	reason := fs.String("reason", "", "why")
	markBody(fs, "surviving-task", "reason")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.SupersedeRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if *survivor == 0 || *reason == "" {
				return usageErrorf("--surviving-task and --reason are required (or --filename)")
			}
			req = client.SupersedeRequest{SurvivingTask: *survivor, Reason: *reason}
			return nil
		}); err != nil {
			return err
		}
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Allocation().Supersede(ctx, *slug, *id, req)
		})
	}
	return cmd
}

func (a *app) taskHoldCommand() *cobra.Command {
	cmd, o := a.apiCommand("hold --space SLUG --id N [--lift]",
		"put (or lift) a steward hold: the task keeps its key (controller role)",
		`hold puts a steward hold on a task, or with --lift lifts it, and prints {task}.
A held task cannot be reopened and keeps its key, also once finished.`, nil)
	slug := spaceFlag(cmd)
	id := taskIDFlag(cmd)
	lift := cmd.Flags().Bool("lift", false, "lift the hold instead")
	cmd.RunE = func(*cobra.Command, []string) error {
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Allocation().Hold(ctx, *slug, *id, client.HoldRequest{Hold: !*lift})
		})
	}
	return cmd
}

func (a *app) taskNoteCommand() *cobra.Command {
	cmd, o := a.apiCommand("note --space SLUG --id N --body TEXT --delivery-mode M [--criterion I] [--idempotency-key K]",
		"post a note on a criterion of a task, first writer per key",
		`note posts a post-review note and prints 201 {note}. The same note by another
is the flat conflict (exit 3). --idempotency-key makes a retry answer the
original note; without one the command makes a key and, if the outcome is
unknown, prints "retry with: --idempotency-key K" on stderr. --filename gives the
whole body instead of the field flags.`, nil)
	slug := spaceFlag(cmd)
	id := taskIDFlag(cmd)
	fs := cmd.Flags()
	kind := fs.String("kind", "post_review_note", "the note's kind")
	criterion := fs.Int64("criterion", 0, "criterion_index (absent: the note is on no criterion)")
	text := fs.String("body", "", "the note's text")
	mode := fs.String("delivery-mode", "", "the delivery mode")
	markBody(fs, "kind", "criterion", "body", "delivery-mode")
	key := keyFlag(fs, "idempotency-key", "the note's Idempotency-Key (default: a new key, printed on an unknown outcome)")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.NoteRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if *text == "" || *mode == "" {
				return usageErrorf("--body and --delivery-mode are required (or --filename)")
			}
			req = client.NoteRequest{Kind: *kind, Body: *text, DeliveryMode: *mode}
			if fs.Changed("criterion") {
				req.CriterionIndex = criterion
			}
			return nil
		}); err != nil {
			return err
		}
		k := key.get()
		return key.advise(a, a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Allocation().PostNote(ctx, *slug, *id, req, k)
		}))
	}
	return cmd
}

func (a *app) taskNotesCommand() *cobra.Command {
	cmd, o := a.apiCommand("notes --space SLUG --id N [--after CURSOR] [--limit N]", "a task's notes, a page at a time",
		"notes prints one page {notes, next_cursor}; --after takes the next_cursor.", nil)
	slug := spaceFlag(cmd)
	id := taskIDFlag(cmd)
	p := addPageFlags(cmd.Flags(), true)
	cmd.RunE = func(*cobra.Command, []string) error {
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Allocation().ListNotes(ctx, *slug, *id, p.query())
		})
	}
	return cmd
}

func (a *app) taskBindCommand() *cobra.Command {
	cmd, o := a.apiCommand("bind --space SLUG --title T [--work-item W]",
		"which catalog slot a title binds to (writes nothing)",
		`bind prints {work_item_id, target, scores}: the slot a create with this title
would take (the charter-index bind), and each catalog row's score. --filename gives
the whole body instead of the field flags.`, nil)
	slug := spaceFlag(cmd)
	fs := cmd.Flags()
	title := fs.String("title", "", "the title")
	workItem := fs.String("work-item", "", "work_item_id: the slot named, instead of binding the title")
	markBody(fs, "title", "work-item")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.BindRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if *title == "" {
				return usageErrorf("--title is required (or --filename)")
			}
			req = client.BindRequest{Title: *title, WorkItemID: optionalString(fs, "work-item", *workItem)}
			return nil
		}); err != nil {
			return err
		}
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Allocation().Bind(ctx, *slug, req)
		})
	}
	return cmd
}
