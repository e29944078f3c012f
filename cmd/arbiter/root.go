package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// rootCommand builds the whole command tree. cobra (what etcdctl and
// kubectl are built on) gives every command its own typed flags, help on
// standard output with exit status 0, and shell completion.
func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "arbiter",
		Short: "run and use Arbiter, a Raft-replicated authority for who got there first",
		Long: `arbiter runs Arbiter nodes (serve) and talks to a cluster of them.

Client commands reach the cluster at --addr or $ARBITER_ADDR (comma-separated
API URLs; the next one is tried while a node cannot be reached), with
--token/--token-file or $ARBITER_TOKEN/$ARBITER_TOKEN_FILE, --cert/--key or
$ARBITER_CERT/$ARBITER_KEY, and --ca or $ARBITER_CACERT for https URLs. A flag
given on the command line wins over its variable. Results print as a table,
or with -o json as the API's JSON.

Exit status: 0 done; 1 the call failed or was refused; 2 a wrong command
line or a request the cluster finds invalid; 3 decided and not done (node
create found the node, node cas did not swap, every 409: a key or id another
holds, a stale fence).`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.NoArgs,
		RunE:          helpOnly,
	}
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) { a.warnDeprecated(cmd) }
	root.AddGroup(&cobra.Group{ID: "cluster", Title: "Cluster:"}, &cobra.Group{ID: "data", Title: "Data:"},
		&cobra.Group{ID: "tools", Title: "Tools:"}, &cobra.Group{ID: "domains", Title: "Domains:"})
	add := func(group string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			c.GroupID = group
			root.AddCommand(c)
		}
	}
	add("cluster", a.serveCommand(), a.statusCommand(), a.memberCommand(), a.endpointCommand(), a.snapshotCommand(), a.recoverCommand(), a.benchCommand())
	add("data", a.nodeCommand(), a.whoamiCommand())
	add("tools", a.certCommand(), a.principalCommand(), a.versionCommand(), a.debugCommand())
	add("domains", a.conceptCommand(), a.spaceCommand(), a.taskCommand(), a.workitemCommand(), a.capacityCommand(), a.projectionCommand())
	add("tools", a.mcpCommand()) // agents reach the cluster as MCP tools (mcp.go)
	root.SetHelpCommandGroupID("tools")
	root.SetCompletionCommandGroupID("tools")
	return root
}

// group is a command that only holds subcommands: run alone it prints
// its help; an unknown subcommand is a usage error.
func group(use, short, long string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short, Long: long, Args: cobra.NoArgs, RunE: helpOnly}
	c.AddCommand(subs...)
	return c
}

// helpOnly is the Run of a command that only holds subcommands: alone,
// its help. (Being runnable makes cobra check its arguments, so an
// unknown subcommand is an error rather than the parent's help.)
func helpOnly(cmd *cobra.Command, _ []string) error { return cmd.Help() }

// isCobraUsage reports whether err is one of cobra's own command-line
// errors (an unknown command or flag, a wrong number of arguments).
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires at least", "requires at most", "invalid argument", "flag needs an argument", "required flag"} {
		if strings.HasPrefix(msg, p) || strings.Contains(msg, `required flag(s)`) {
			return true
		}
	}
	return false
}

// exactArgs is cobra.ExactArgs naming what the arguments are, as a
// usage error.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("%s takes %s (%d argument(s)), got %d", cmd.CommandPath(), what, n, len(args))
		}
		return nil
	}
}

// goStyleFlags rewrites -name to --name where name is a long flag of the
// command args run: Go's flag package, which the binary used before,
// accepted both, and scripts written then keep working. Shorthands (-o)
// and values are left alone, and so is everything after "--" and every
// argument of a command that parses its own flags.
func goStyleFlags(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd.DisableFlagParsing {
		return args
	}
	lookup := func(name string) *pflag.Flag {
		if f := cmd.Flags().Lookup(name); f != nil {
			return f
		}
		return cmd.InheritedFlags().Lookup(name)
	}
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			out = append(out, args[i:]...)
			break
		}
		if len(arg) >= 3 && arg[0] == '-' && arg[1] != '-' {
			if name, _, _ := strings.Cut(arg[1:], "="); len(name) > 1 && lookup(name) != nil {
				arg = "-" + arg
			}
		}
		// A duration flag whose value is optional (--wait alone waits
		// its default) takes the next argument too when it is a
		// duration: --wait 20s means what --wait=20s does.
		if name, ok := strings.CutPrefix(arg, "--"); ok && !strings.Contains(name, "=") && i+1 < len(args) {
			if f := lookup(name); f != nil && f.NoOptDefVal != "" && f.Value.Type() == "duration" {
				if _, err := time.ParseDuration(args[i+1]); err == nil {
					out = append(out, arg+"="+args[i+1])
					i++
					continue
				}
			}
		}
		out = append(out, arg)
	}
	return out
}

// deprecated is the annotation of a flag kept for scripts written for an
// earlier release: hidden from help, and a warning on stderr when used.
// (pflag's own deprecation notice goes where cobra sends flag output,
// which can be stdout, in the middle of -o json.)
const deprecated = "arbiter-deprecated"

func deprecate(fs *pflag.FlagSet, name, advice string) {
	_ = fs.SetAnnotation(name, deprecated, []string{advice})
	_ = fs.MarkHidden(name)
}

func (a *app) warnDeprecated(cmd *cobra.Command) {
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if advice, ok := f.Annotations[deprecated]; ok {
			fmt.Fprintf(a.stderr, "arbiter: --%s is deprecated: %s\n", f.Name, strings.Join(advice, " "))
		}
	})
}
