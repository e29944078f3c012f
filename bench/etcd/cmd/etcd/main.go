// Command etcd is the stock etcd server (etcdmain.Main), built from the Go
// module proxy so that Arbiter can be compared with etcd on the same
// machine. `go install` of etcd's own main package is refused because its
// go.mod has replace directives; this wrapper is the usual workaround.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
