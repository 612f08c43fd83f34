// SPDX-License-Identifier: GPL-2.0

package main

import "testing"

func sum(t map[string]int64) int64 {
	var s int64
	for _, v := range t {
		s += v
	}
	return s
}

func TestTargetsWhenTheNeedsFit(t *testing.T) {
	v := view{capacity: 8, demands: map[string]demand{
		"a": {need: 3, floor: 1, rev: 4}, "b": {need: 5, floor: 5, rev: 2},
	}}
	got := v.targets()
	if got["a"] != 3 || got["b"] != 5 || len(got) != 2 {
		t.Fatalf("targets = %v, want a 3, b 5", got)
	}
}

func TestTargetsFloorsFirstInQueueOrder(t *testing.T) {
	// b waited longest: its first waiter (5) comes before a's.
	v := view{capacity: 6, demands: map[string]demand{
		"a": {need: 6, floor: 4, rev: 9},
		"b": {need: 6, floor: 5, rev: 3},
	}}
	got := v.targets()
	if got["b"] != 5 || got["a"] != 1 {
		t.Fatalf("targets = %v, want b 5 (its floor), a 1", got)
	}
}

func TestTargetsShareTheRestMaxMinFairly(t *testing.T) {
	v := view{capacity: 12, demands: map[string]demand{
		"a": {need: 2, floor: 1, rev: 1},
		"b": {need: 10, floor: 1, rev: 2},
		"c": {need: 10, floor: 1, rev: 3},
	}}
	got := v.targets()
	// a needs 2 in all; b and c share the other 10 evenly.
	if got["a"] != 2 || got["b"] != 5 || got["c"] != 5 {
		t.Fatalf("targets = %v, want a 2, b 5, c 5", got)
	}
}

func TestTargetsNeverExceedTheCapacity(t *testing.T) {
	for c := int64(1); c < 20; c++ {
		v := view{capacity: c, demands: map[string]demand{
			"a": {need: 7, floor: 3, rev: 1},
			"b": {need: 9, floor: 9, rev: 2},
			"c": {need: 1, floor: 1, rev: 3},
			"d": {need: 13, floor: 2, rev: 4},
		}}
		got := v.targets()
		if s := sum(got); s > c || (s < c && s < 30) {
			t.Fatalf("capacity %d: targets %v add up to %d", c,
				got, s)
		}
		for h, x := range got {
			if x < 0 || x > v.demands[h].need {
				t.Fatalf("capacity %d: %s gets %d", c, h, x)
			}
		}
	}
}

func TestOthersWait(t *testing.T) {
	v := view{capacity: 4, shares: map[string]int64{"a": 4},
		demands: map[string]demand{"a": {need: 2, floor: 2}}}
	if v.othersWait("a") || v.free() != 0 {
		t.Fatal("nobody else waits")
	}
	v.demands["b"] = demand{need: 2, floor: 2, rev: 7}
	if !v.othersWait("a") || v.othersWait("b") {
		t.Fatal("othersWait: b lacks 2")
	}
}
