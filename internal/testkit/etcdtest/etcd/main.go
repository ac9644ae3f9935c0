// Command etcd is the upstream etcd server (go.etcd.io/etcd/server/v3's
// etcdmain, the version in berth's go.mod), built by tests that need a real
// multi-member cluster of separate processes they can kill.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
