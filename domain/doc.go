// Package domain is the contract between Arbiter's host (package cluster)
// and its domains (nodes, authority, capacity, ...), so that neither
// imports the other.
//
// A domain package exports one function returning a Domain: its FSM
// module (tables, commands with versions, queries, tick), its HTTP routes
// built with Endpoint (one adapter: path, query and header binding, a
// strict body, a status and an error encoder per route) on a Host, its
// configuration hooks (serve flags, a Load run at start and on SIGHUP)
// and its CLI command. The host mounts the routes behind authentication
// and the route's Access level, replicates the module's commands, and
// advertises what it serves so that a cluster enables a domain only once
// every member serves it.
//
// Adding a domain is one new package plus one line in the list of
// built-in domains (package domain/builtin); the host is not changed.
package domain
