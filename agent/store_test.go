// SPDX-License-Identifier: GPL-2.0

package main

import (
	"testing"
	"time"
)

// A claim is taken over only from this machine: the same machine id, or
// without one the same boot; an empty claim is an older agent's.
func TestSameMachine(t *testing.T) {
	me := thisMachine()
	if !sameMachine(me) || !sameMachine("") {
		t.Fatalf("this machine's claim %q, or an empty one, is not ours", me)
	}
	if sameMachine("machine=0123 boot=4567") {
		t.Fatalf("another machine's claim is ours (this one is %q)", me)
	}
	// Without a machine id on one side, the boot decides.
	boot := readID("/proc/sys/kernel/random/boot_id")
	if !sameMachine("machine= boot=" + boot) {
		t.Fatal("a claim of this boot without a machine id is not ours")
	}
	if sameMachine("machine= boot=4567") {
		t.Fatal("a claim of another boot without a machine id is ours")
	}
}

// set-capacity's N: a number from 1 to capacity='s largest, nothing else.
func TestParseCapacity(t *testing.T) {
	for _, bad := range []string{"-1", "0", "x", "4x", "", "4611686018427387905"} {
		if n, err := parseCapacity(bad); err == nil {
			t.Errorf("set-capacity %q: taken as %d", bad, n)
		}
	}
	if n, err := parseCapacity("4"); err != nil || n != 4 {
		t.Errorf("set-capacity 4: %d, %v", n, err)
	}
}

// The etcd client pings a silent member and leaves it within ttl=/3
// (1 to 5 s) of no answer.
func TestClientKeepalive(t *testing.T) {
	for ttl, want := range map[int]time.Duration{1: time.Second,
		9: 3 * time.Second, 3600: 5 * time.Second} {
		lim := &limit{endpoints: []string{"http://127.0.0.1:2379"}, ttl: ttl}
		cfg, err := lim.clientConfig()
		if err != nil || cfg.DialKeepAliveTime != keepAliveTime ||
			cfg.DialKeepAliveTimeout != want {
			t.Errorf("ttl=%d: keepalive %v, timeout %v (want %v), %v",
				ttl, cfg.DialKeepAliveTime, cfg.DialKeepAliveTimeout,
				want, err)
		}
	}
}
