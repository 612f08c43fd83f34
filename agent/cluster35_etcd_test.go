// SPDX-License-Identifier: GPL-2.0

//go:build etcd && etcd35

package main

// The in-process etcd of store_etcd_test.go, etcd 3.5's (trixie's
// golang-etcd-server-dev); cluster34_etcd_test.go is 3.4's.  3.5 asks
// for its test context first (BeforeTestExternal: a working directory of
// the test's own, undone at its end), and puts a bridge in front of a
// member only when asked (UseBridge), as 3.4 always did.

import (
	"testing"

	"go.etcd.io/etcd/tests/v3/integration"
)

type clusterConfig = integration.ClusterConfig

// A cluster of cfg.Size members, each with a client (Client(i),
// RandClient()) and a bridge in front of its gRPC address that can drop
// what passes (blackhole).
type cluster struct {
	*integration.ClusterV3
}

func newCluster(t *testing.T, cfg *clusterConfig) cluster {
	t.Helper()
	integration.BeforeTestExternal(t)
	cfg.UseBridge = true
	return cluster{integration.NewClusterV3(t, cfg)}
}

// addr is member i's address for a client's endpoints (its bridge's).
func (c cluster) addr(i int) string { return c.Members[i].GRPCURL() }

func (c cluster) blackhole(i int)   { c.Members[i].Bridge().Blackhole() }
func (c cluster) unblackhole(i int) { c.Members[i].Bridge().Unblackhole() }
