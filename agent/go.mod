// wsem-agent is built in GOPATH mode only (Makefile: GO111MODULE=off,
// against Debian's /usr/share/gocode), where this file does one thing: it
// puts the agent in "a tree with a go.mod", whose imports of a path with a
// module's /vN (etcd 3.5's go.etcd.io/etcd/api/v3/..., client/pkg/v3/...,
// tests/v3/...: etcdapi/etcd35.go, cluster35_etcd_test.go) the go command
// reads, where no such directory exists, as the directory without the /vN
// whose go.mod declares that module: Debian ships etcd 3.5 so
// (go.etcd.io/etcd/api, "module go.etcd.io/etcd/api/v3").  Etcd 3.4's
// paths have no /vN: its build is as without this file.
module wsem.example/agent

go 1.19
