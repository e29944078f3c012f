package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/mcptools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// mcpCommand is `arbiter mcp`: the cluster's tools for an agent, as a
// Model Context Protocol server on standard input and output (what agent
// hosts launch). It is a client of the cluster (package mcptools).
func (a *app) mcpCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "mcp",
		Short: "serve the cluster's tools to an agent over MCP (stdio)",
		Long: `mcp serves the cluster to an AI agent as Model Context Protocol tools and
resources, over standard input and output: add it to an agent host's MCP
configuration (docs/mcp.md) and the host launches it.

Every tool is one call of the cluster's HTTP API at --addr, made with the
credential of --token/ARBITER_TOKEN (or --token-file, --cert/--key): the
agent acts as that principal, and no tool takes an owner or principal. A
tool's result is the API's JSON body; a refusal is a tool error whose
content is the API's error body (allocation_conflict naming the winner,
stale_fence, exhausted, ...). Only the domains the cluster enables have
tools; the list is read once, at start. --timeout bounds each call.

The command runs until its input ends. Log lines go to standard error.`,
		Example: `  ARBITER_TOKEN=... arbiter mcp --addr http://10.0.0.1:8000,http://10.0.0.2:8000`,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return a.runMCP(cmd.Context()) },
	}
	a.connFlags(c.Flags())
	return c
}

// runMCP serves MCP on the app's streams until they end or a signal
// stops it.
func (a *app) runMCP(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	c, err := a.apiClient()
	if err != nil {
		return err
	}
	defer c.Close()
	cctx, cancel := context.WithTimeout(ctx, a.timeout)
	enabled, err := mcptools.EnabledOf(cctx, c)
	cancel()
	if err != nil {
		return fmt.Errorf("read what the cluster enables: %w", err)
	}
	server := mcptools.New(enabled, mcptools.Fixed(c))
	err = server.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(a.stdin), Writer: nopWriteCloser{a.stdout}})
	if ctx.Err() != nil { // stopped by a signal: a normal end
		return nil
	}
	return err
}

// mcpFlag registers serve's --mcp, which mounts the MCP endpoint at
// /mcp of the node's API (cluster.Config.Mounts).
func (a *app) mcpFlag(fs *pflag.FlagSet, cfg *cluster.Config) {
	f := fs.VarPF(&mcpMount{cfg: cfg}, "mcp", "", "also serve the cluster's tools to agents at /mcp (Model Context Protocol, streamable HTTP), authenticated as the API is; each call is the caller's bearer token's (docs/mcp.md)")
	f.NoOptDefVal = "true"
}

// mcpCallTimeout bounds each API call a tool of /mcp makes (as --timeout
// does for arbiter mcp).
const mcpCallTimeout = 30 * time.Second

// mcpMount is the value of --mcp: a bool that mounts /mcp when true.
type mcpMount struct {
	cfg *cluster.Config
	on  bool
}

func (m *mcpMount) Set(s string) error {
	on, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	m.on = on
	delete(m.cfg.Mounts, "/mcp")
	if on {
		if m.cfg.Mounts == nil {
			m.cfg.Mounts = map[string]func(http.Handler) http.Handler{}
		}
		m.cfg.Mounts["/mcp"] = func(api http.Handler) http.Handler { return mcptools.HTTPHandler(api, mcpCallTimeout) }
	}
	return nil
}

func (m *mcpMount) String() string { return strconv.FormatBool(m.on) }

func (m *mcpMount) Type() string { return "bool" }

// nopWriteCloser leaves the app's output open when the session ends.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
