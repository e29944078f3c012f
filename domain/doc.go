// Package domain is the contract between Arbiter's host (package cluster)
// and its domains (nodes, authority, capacity, ...), so that neither
// imports the other.
//
// A domain package exports one function returning a Domain: its FSM
// module (tables, commands with versions, queries, tick), its HTTP routes
// built with Endpoint (one adapter: path, query and header binding, a
// strict body, a status and an error encoder per route) on a Host, and
// its configuration hooks (serve flags, a Load run at start and on
// SIGHUP). Its command line is not here: the arbiter binary (cmd/arbiter)
// builds every command and calls the routes through package client. The
// host mounts the routes behind authentication and the route's Access
// level, replicates the module's commands, and advertises what it serves
// so that a cluster enables a domain only once every member serves it.
//
// Adding a domain is one new package plus one line in the list of
// built-in domains (package domain/builtin); the host is not changed.
//
// The contract is code, checked where the domains are composed:
//
//   - a module declares the block of command and query types it owns
//     (fsm.Module.Types); fsm.New refuses a type outside its module's
//     block and two modules whose blocks overlap;
//   - a domain registers its own decision codes with their HTTP status
//     (errs.MustRegister in a package-level var), beside the shared codes
//     of package errs;
//   - Module only describes (Check and every replica call it, Check before
//     flags are parsed): whatever a node keeps outside the state, such as
//     projection's file writer, is made on first use;
//   - the in-server adapters a module accepts in place of a role are
//     listed in its static configuration (nodes.AcceptAdapters, which
//     builtin gives every node alike, since Apply reads it);
//   - the determinism lint (internal/detcheck) finds every package that
//     registers commands by itself.
package domain
