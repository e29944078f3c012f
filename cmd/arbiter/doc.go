// Command arbiter runs and inspects Arbiter nodes: `arbiter --help` lists
// its commands and `arbiter <command> --help` says what each takes.
//
//	arbiter serve ...                      run a node
//	arbiter status | member | endpoint     the cluster, its members and their health
//	arbiter node create|get|cas|list|watch the node primitives
//	arbiter whoami                         the principal the credentials name
//	arbiter snapshot save|inspect|restore|verify FILE
//	arbiter recover | cert | principal     offline tools
//	arbiter concept | space | task ...     concept ids; allocation spaces and tasks (over package client)
//	arbiter <domain> ...                   capacity, projection, workitem (their packages' commands)
//
// Client commands find the cluster with --addr or $ARBITER_ADDR
// (comma-separated; they move to the next address while one cannot be
// reached) and authenticate with --token, --token-file, --cert/--key or
// $ARBITER_TOKEN, $ARBITER_TOKEN_FILE, $ARBITER_CERT, $ARBITER_KEY; https
// URLs are checked against --ca or $ARBITER_CACERT. Results print as a
// table or, with -o json, as the API's JSON.
//
// With no flags, serve runs a single-node cluster in ./arbiter-data with
// raft on 127.0.0.1:7000 and the HTTP API on 127.0.0.1:8000, serving the
// built-in domains (package domain/builtin). With flags, a node with an
// empty data directory needs --bootstrap (a new cluster) or --join; a node
// with state resumes the membership its data directory records, and
// refuses to start with another --id, other addresses (unless
// --change-address), or a --join naming another cluster. A node removed
// from its cluster exits non-zero.
//
// Exit status: 0 done; 1 the call failed or was refused; 2 a wrong command
// line (nothing was sent); 3 decided and not done (node create found the
// node, node cas did not swap: the answer is printed all the same).
package main
