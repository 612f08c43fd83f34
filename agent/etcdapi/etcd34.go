// SPDX-License-Identifier: GPL-2.0

//go:build !etcd35

// Package etcdapi is the part of etcd's client the agent uses, under one
// import path whichever etcd Debian ships: 3.4 (bookworm's
// golang-etcd-server-dev, this file, the default) or 3.5 (trixie's, whose
// packages moved to go.etcd.io/etcd/client/v3, api/v3 and client/pkg/v3:
// etcd35.go, build tag etcd35).  Type aliases, so the values are etcd's
// own; the agent's files import it as clientv3.
package etcdapi

import (
	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/etcdserver/api/v3rpc/rpctypes"
	"go.etcd.io/etcd/mvcc/mvccpb"
	"go.etcd.io/etcd/pkg/transport"
)

// clientv3
type (
	Client             = clientv3.Client
	Config             = clientv3.Config
	Cmp                = clientv3.Cmp
	Op                 = clientv3.Op
	OpOption           = clientv3.OpOption
	Lease              = clientv3.Lease
	LeaseID            = clientv3.LeaseID
	LeaseGrantResponse = clientv3.LeaseGrantResponse
	Watcher            = clientv3.Watcher
	WatchChan          = clientv3.WatchChan
	WatchResponse      = clientv3.WatchResponse
)

var (
	New               = clientv3.New
	Compare           = clientv3.Compare
	Value             = clientv3.Value
	ModRevision       = clientv3.ModRevision
	CreateRevision    = clientv3.CreateRevision
	LeaseValue        = clientv3.LeaseValue
	OpGet             = clientv3.OpGet
	OpPut             = clientv3.OpPut
	OpDelete          = clientv3.OpDelete
	WithPrefix        = clientv3.WithPrefix
	WithLease         = clientv3.WithLease
	WithRev           = clientv3.WithRev
	WithCreatedNotify = clientv3.WithCreatedNotify
	WithRequireLeader = clientv3.WithRequireLeader
)

// mvccpb: a key's value and revisions; a watch event's type.
type KeyValue = mvccpb.KeyValue

const DELETE = mvccpb.DELETE

// rpctypes: a lease etcd no longer has (a keepalive or revoke after its
// TTL ran out).
var ErrLeaseNotFound = rpctypes.ErrLeaseNotFound

// transport: the client's certificates.
type TLSInfo = transport.TLSInfo
