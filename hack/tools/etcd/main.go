// Command etcd is etcd's own server entry point, built from the published module so the
// test control plane needs no downloaded binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
