// Quickstart starts a 3-node Arbiter cluster inside this process over
// loopback TCP and shows what it is for:
//
//  1. 50 concurrent clients race, through all three nodes' HTTP APIs, to
//     create the same 10 node ids: exactly one client wins each id.
//  2. The leader is stopped; the other two elect a new leader, which keeps
//     serving fenced compare-and-set updates.
//  3. The stopped node restarts on its own data and catches up to the same
//     state as the others.
//
// It prints a short summary and exits 0 only if every check held.
package main
