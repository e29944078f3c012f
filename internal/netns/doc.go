// Package netns builds a small network of Linux network namespaces for
// tests that partition real processes, Jepsen style: one namespace per
// member and one for the clients, each with one address, joined pairwise
// by veth links with a host route per peer. Cutting the route between two
// namespaces (a blackhole, so packets vanish rather than bounce) partitions
// exactly that pair: a leader cut from everyone, a minority, a one-sided
// bridge, a flapping link, each healed by putting the route back. Taking a
// link down is the other, louder fault (the peer becomes unreachable at
// once).
//
// The network uses only addresses inside the namespaces it creates
// (10.77.0.0/24 on each namespace's loopback), never touches the host's
// own namespace, and removes every namespace when the test ends, also on
// failure. New skips the test, saying why, where namespaces cannot be made
// (not root, no ip(8), no permission).
//
// Processes run in a namespace through Cmd (ip netns exec execs the
// program, so the process id is the program's own, and a kill -9 reaches
// it). The test process itself stays in the host namespace; Dial opens
// its sockets inside the client namespace.
package netns
