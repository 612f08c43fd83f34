// SPDX-License-Identifier: GPL-2.0

//go:build etcd && !etcd35

package main

// The in-process etcd of store_etcd_test.go, etcd 3.4's (bookworm's
// golang-etcd-server-dev); cluster35_etcd_test.go is 3.5's.

import (
	"testing"

	"go.etcd.io/etcd/integration"
)

type clusterConfig = integration.ClusterConfig

// A cluster of cfg.Size members, each with a client (Client(i),
// RandClient()) and a bridge in front of its gRPC address that can drop
// what passes (blackhole).
type cluster struct {
	*integration.ClusterV3
}

func newCluster(t *testing.T, cfg *clusterConfig) cluster {
	return cluster{integration.NewClusterV3(t, cfg)}
}

// addr is member i's address for a client's endpoints (its bridge's).
func (c cluster) addr(i int) string { return c.Members[i].GRPCAddr() }

func (c cluster) blackhole(i int)   { c.Members[i].Blackhole() }
func (c cluster) unblackhole(i int) { c.Members[i].Unblackhole() }
