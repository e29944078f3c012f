package domain

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/bounds"
)

// Domain is everything a host needs to run one domain. Each domain
// package exports a function that returns its Domain (nodes.Domain(),
// capacity.Domain(), ...); the host knows no domain by name.
type Domain struct {
	// Name is the domain's name: its module's name and its name in
	// capabilities, lowercase ASCII letters, digits and '_'.
	Name string
	// Module describes the replicated state the domain owns: tables,
	// commands (inside the module's declared type range), queries,
	// tick. Every replica calls it for its own FSM, and Check calls it
	// too, before flags are parsed: it must build nothing else (no
	// file, no writer, nothing that keeps configuration as it was then).
	// Nil for a domain that only adds an API over another domain's state.
	Module func() fsm.Module
	// Requires names the domains this one builds on; a set that lacks
	// one is refused.
	Requires []string
	// Routes are the domain's HTTP routes, bound to the host they run on.
	Routes func(Host) []Route
	// Flags registers the domain's `arbiter serve` flags; Load reads what
	// they name. Both may be nil.
	Flags func(fs *flag.FlagSet)
	// Load (re)reads the configuration the domain's flags name: once
	// after flags are parsed (an error stops the server) and again on
	// SIGHUP (an error keeps the previous configuration).
	Load func() error
	// Start, if set, runs in its own goroutine once the node has started,
	// until ctx ends when the node stops: the place to keep the host for
	// later (a Load on SIGHUP that must propose what it read) or to
	// propose configuration read at start once a leader exists.
	Start func(ctx context.Context, h Host)
}

// Backend is where a domain's service sends commands and reads: a cluster
// node, a remote cluster, or a bare FSM in tests.
type Backend interface {
	fsm.Proposer
	fsm.Reader
}

// Host is what a domain's routes run on. As a Backend it proposes and
// reads as the principal on the request's context, which the host sets
// from the verified credential before a route's handler runs.
type Host interface {
	Backend
	// Adapter is the host acting as an in-server adapter of that name:
	// every command and query it passes on is marked with the name
	// (log.Command.Adapter), which a module may accept in place of a
	// role it would otherwise require (the node primitives accept the
	// concept authority's). Only code inside a node can hold one; the
	// host clears the mark on everything a client sends.
	Adapter(name string) Backend
	// Logger is the host's logger.
	Logger() *slog.Logger
}

// Check validates a set of domains: names well formed and unique, every
// required domain present, every module named after its domain. A host
// calls it before it builds anything (and CheckRoutes on their routes).
func Check(domains []Domain) error {
	var problems []string
	names := map[string]bool{}
	for _, d := range domains {
		if !validName(d.Name) {
			problems = append(problems, fmt.Sprintf("domain name %q: want 1-32 lowercase letters, digits or '_'", d.Name))
		}
		if names[d.Name] {
			problems = append(problems, fmt.Sprintf("domain %q listed twice", d.Name))
		}
		names[d.Name] = true
	}
	for _, d := range domains {
		for _, r := range d.Requires {
			if !names[r] {
				problems = append(problems, fmt.Sprintf("domain %q requires domain %q, which is not in the set", d.Name, r))
			}
		}
		if d.Module != nil {
			if m := d.Module(); m.Name != d.Name {
				problems = append(problems, fmt.Sprintf("domain %q has a module named %q", d.Name, m.Name))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("domains: %s", strings.Join(problems, "; "))
	}
	return nil
}

func validName(s string) bool {
	if s == "" || len(s) > 32 || bounds.Identifier("name", s) != nil {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// Modules builds the FSM modules of domains, in the order given (the FSM
// orders what needs ordering by name itself).
func Modules(domains []Domain) []fsm.Module {
	var out []fsm.Module
	for _, d := range domains {
		if d.Module != nil {
			out = append(out, d.Module())
		}
	}
	return out
}

// Served is what a binary running domains serves.
func Served(domains []Domain) fsm.Capabilities {
	return fsm.ServedBy(Modules(domains)...)
}

// Names lists the domains' names, sorted.
func Names(domains []Domain) []string {
	out := make([]string, 0, len(domains))
	for _, d := range domains {
		out = append(out, d.Name)
	}
	slices.Sort(out)
	return out
}
