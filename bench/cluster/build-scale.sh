#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The scale scenario's simulators (make bench-cluster with WSEM_BC_SCALE):
# bench/cluster/scalesim_test.go built, as a test binary of the agent's
# package, into a copy of agent/ (and bindings/go) of each tree compared:
#   OUT/wsem-scale-new  this tree's agent (the working tree)
#   OUT/wsem-scale-old  the agent of revision OLD (WSEM_BC_SCALE_OLD,
#                       default bbe0767: main before the kept view, whose
#                       looks read the whole prefix from etcd)
# Offline, in GOPATH mode, against Debian's etcd 3.4 (as agent/Makefile
# builds the agent by default); static.
#
# usage: build-scale.sh OUT
set -eu -o pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:?usage: build-scale.sh OUT}
OLD=${WSEM_BC_SCALE_OLD:-bbe0767}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# build TREE: OUT/TREE/src holds agent/ and bindings/go; the simulator is
# copied into its agent/ and built in a GOPATH of its own.
build() {
	local src=$OUT/$1/src pkg=$OUT/$1/gopath/src/wsem.example
	cp "$HERE/scalesim_test.go" "$src/agent/"
	mkdir -p "$pkg"
	ln -sfn "$src/agent" "$pkg/agent"
	ln -sfn "$src/bindings/go" "$pkg/wsem"
	(cd "$pkg/agent" &&
		GOPATH=$OUT/$1/gopath:/usr/share/gocode GOCACHE=$OUT/cache \
		GO111MODULE=off GOFLAGS='' GOPROXY=off GOENV=off \
		GOTOOLCHAIN=local CGO_ENABLED=0 \
		go test -c -tags scalesim -o "$OUT/wsem-scale-$1" .)
}

rm -rf "$OUT/old/src" "$OUT/new/src"
mkdir -p "$OUT/old/src" "$OUT/new/src/bindings"
git -C "$ROOT" archive "$OLD" agent bindings/go | tar -x -C "$OUT/old/src"
cp -r "$ROOT/agent" "$OUT/new/src/"
cp -r "$ROOT/bindings/go" "$OUT/new/src/bindings/"
build old
build new
git -C "$ROOT" rev-parse --short "$OLD" >"$OUT/old.rev"
