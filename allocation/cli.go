package allocation

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/strictjson"
)

const spaceUsage = `usage: arbiter space <put|get|list|reservations|occupancy|duplicates> [--space SLUG] [--addr URL] [--json BODY] [--after CURSOR] [--limit N]

put sends the PUT /v1/spaces/{slug} body given with --json (or on standard
input) and prints {space, rebound, duplicates}; get prints {space}. list
pages the spaces the caller may read (no --space); reservations,
occupancy and duplicates page a space's live reservations, the keys held
in it now and its duplicate tasks (--after takes a next_cursor). Example:
  arbiter space put --space multi-agent-research --json '{"catalog":[{"work_item_id":"T1","canonical_title":"Comparative survey","aliases":[]}]}'
  arbiter space occupancy --space multi-agent-research --limit 50
`

const taskUsage = `usage: arbiter task <create|bind|list|transition|supersede|note> --space SLUG [--id N] [--json BODY] [flags]

create, bind, transition, supersede and note send the body of their route
(see README) given with --json, or on standard input; list pages tasks.
A 409 prints the spec's flat conflict body. Examples:
  arbiter task create --space mar --idempotency-key k1 --json '{"title":"Survey","delivery_mode":"result"}'
  arbiter task transition --space mar --id 3 --json '{"action":"claim"}'
  arbiter task list --space mar --status open
`

func spaceCLI() *domain.CLI {
	return &domain.CLI{Name: "space", Summary: "put, get and list allocation spaces (charter catalog, delivery modes, window), their reservations, occupancy and duplicates", Run: runSpaceCLI}
}

func taskCLI() *domain.CLI {
	return &domain.CLI{Name: "task", Summary: "create, bind, list, transition, supersede and annotate allocation tasks", Run: runTaskCLI}
}

// cliCall is what one CLI command parsed: a connection, flags and body.
type cliCall struct {
	env     domain.CLIEnv
	svc     *Service
	space   string
	id      uint64
	body    []byte
	key     string
	status  string
	after   string
	limit   int
	include bool
}

func parseCLI(env domain.CLIEnv, name string, commands []string, usage string, args []string, needsBody func(string) bool) (string, *cliCall, error) {
	if len(args) == 0 || !slices.Contains(commands, args[0]) {
		fmt.Fprint(env.Stderr, usage)
		return "", nil, fmt.Errorf("missing or unknown %s command", name)
	}
	cmd := args[0]
	c := &cliCall{env: env}
	fs := flag.NewFlagSet(name+" "+cmd, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.StringVar(&c.space, "space", "", "space slug")
	fs.Uint64Var(&c.id, "id", 0, "task id")
	body := fs.String("json", "", "request body (default: read standard input)")
	fs.StringVar(&c.key, "idempotency-key", "", "Idempotency-Key of a create or note")
	fs.StringVar(&c.status, "status", "", "list: only tasks of this status")
	fs.StringVar(&c.after, "after", "", "a list: the next_cursor of the page before")
	fs.IntVar(&c.limit, "limit", 0, "a list: page size (1-128)")
	fs.BoolVar(&c.include, "include-superseded", false, "list: include superseded tasks")
	connect := env.Connect(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return "", nil, err
	}
	if c.space == "" && !(name == "space" && cmd == "list") {
		return "", nil, errors.New("--space is required")
	}
	conn, err := connect()
	if err != nil {
		return "", nil, err
	}
	c.svc = NewService(conn, conn)
	if needsBody(cmd) {
		c.body = []byte(*body)
		if *body == "" {
			if c.body, err = io.ReadAll(io.LimitReader(env.Stdin, domain.MaxBodyBytes+1)); err != nil {
				return "", nil, err
			}
		}
	}
	return cmd, c, nil
}

// decode reads the command's JSON body into v, strictly.
func (c *cliCall) decode(v any) error {
	if err := strictjson.Decode(c.body, v); err != nil {
		return fmt.Errorf("the request body: %v", err)
	}
	return nil
}

// print writes res as indented JSON, or the error's body (the flat
// conflict, or the standard envelope) and returns err.
func (c *cliCall) print(res any, err error) error {
	var answer any = res
	var conflict *Conflict
	switch {
	case errors.As(err, &conflict):
		answer = conflict
	case err != nil:
		answer = map[string]*errs.Error{"error": errs.From(err)}
	}
	enc := json.NewEncoder(c.env.Stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if werr := enc.Encode(answer); werr != nil {
		return werr
	}
	return err
}

func cliContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

func runSpaceCLI(env domain.CLIEnv, args []string) error {
	commands := []string{"put", "get", "list", "reservations", "occupancy", "duplicates"}
	cmd, c, err := parseCLI(env, "space", commands, spaceUsage, args, func(cmd string) bool { return cmd == "put" })
	if err != nil {
		return err
	}
	ctx, cancel := cliContext()
	defer cancel()
	switch cmd {
	case "get":
		return c.print(c.svc.GetSpace(ctx, c.space, fsm.Linearizable))
	case "list":
		return c.print(c.svc.ListSpaces(ctx, c.after, c.limit, fsm.Linearizable))
	case "reservations":
		return c.print(c.svc.ListReservations(ctx, c.space, c.after, c.limit, fsm.Linearizable))
	case "occupancy":
		return c.print(c.svc.ListOccupancy(ctx, c.space, c.after, c.limit, fsm.Linearizable))
	case "duplicates":
		return c.print(c.svc.ListDuplicates(ctx, c.space, c.after, c.limit, fsm.Linearizable))
	}
	var req PutSpaceRequest
	if err := c.decode(&req); err != nil {
		return err
	}
	return c.print(c.svc.PutSpace(ctx, c.space, req))
}

func runTaskCLI(env domain.CLIEnv, args []string) error {
	commands := []string{"create", "bind", "list", "transition", "supersede", "note"}
	cmd, c, err := parseCLI(env, "task", commands, taskUsage, args, func(cmd string) bool { return cmd != "list" })
	if err != nil {
		return err
	}
	ctx, cancel := cliContext()
	defer cancel()
	if (cmd == "transition" || cmd == "supersede" || cmd == "note") && c.id == 0 {
		return fmt.Errorf("task %s needs --id", cmd)
	}
	switch cmd {
	case "create":
		var req CreateTaskRequest
		if err := c.decode(&req); err != nil {
			return err
		}
		req.IdempotencyKey = c.key
		return c.print(c.svc.CreateTask(ctx, c.space, req))
	case "bind":
		var req BindRequest
		if err := c.decode(&req); err != nil {
			return err
		}
		return c.print(c.svc.Bind(ctx, c.space, req, fsm.Linearizable))
	case "list":
		return c.print(c.svc.ListTasks(ctx, c.space, ListRequest{Status: c.status, IncludeSuperseded: c.include, After: c.after, Limit: c.limit}, fsm.Linearizable))
	case "transition":
		var req TransitionRequest
		if err := c.decode(&req); err != nil {
			return err
		}
		return c.print(c.svc.Transition(ctx, c.space, c.id, req))
	case "supersede":
		var req SupersedeRequest
		if err := c.decode(&req); err != nil {
			return err
		}
		return c.print(c.svc.Supersede(ctx, c.space, c.id, req))
	default: // note
		var req NoteRequest
		if err := c.decode(&req); err != nil {
			return err
		}
		req.IdempotencyKey = c.key
		return c.print(c.svc.PostNote(ctx, c.space, c.id, req))
	}
}
