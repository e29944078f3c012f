// Command compareplot turns the output of bench/compare.sh into the
// etcd comparison's table and chart: for every client count the median of
// each system's rounds (ops/s, p50, p99, server CPU per operation), the
// ratio of the medians, and an SVG of ops/s, p99 and CPU per operation
// against clients on a log scale.
//
//	bench/compare.sh 3 8s 1,4,16,64,256 | tee compare.log
//	go run ./bench/compareplot -svg docs/compare-etcd.svg < compare.log
//
// compare.sh runs it itself at the end when COMPARE_SVG names a file.
package main
