// SPDX-License-Identifier: GPL-2.0

package main

import (
	"testing"
	"time"
)

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

func TestTargetsFrontWholeThenFloorsInQueueOrder(t *testing.T) {
	// b is at the front: its whole need (4) comes first; then c's floor
	// (2) before a's, though a's need is larger.
	v := view{capacity: 7, demands: map[string]demand{
		"a": {need: 6, floor: 2, rev: 9},
		"b": {need: 4, floor: 1, rev: 3},
		"c": {need: 3, floor: 2, rev: 5},
	}}
	got := v.targets()
	if got["b"] != 4 || got["c"] != 2 || got["a"] != 1 {
		t.Fatalf("targets = %v, want b 4 (its need), c 2 (its floor), a 1", got)
	}
	// The front's need above the capacity: all of it to the front.
	v.demands["b"] = demand{need: 9, floor: 1, rev: 3}
	got = v.targets()
	if got["b"] != 7 || got["c"] != 0 || got["a"] != 0 {
		t.Fatalf("targets = %v, want b 7, c 0, a 0", got)
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

func TestFrontIsTheOldestDemand(t *testing.T) {
	v := view{capacity: 6, demands: map[string]demand{
		"a": {need: 6, floor: 3, rev: 9},
		"b": {need: 6, floor: 3, rev: 3},
	}}
	if !v.front("b") || v.front("a") || v.front("c") {
		t.Fatalf("front: b %v a %v c %v, want b only", v.front("b"),
			v.front("a"), v.front("c"))
	}
}

func TestTurnOverAfterTheTurnAtTheFront(t *testing.T) {
	v := &view{capacity: 6, shares: map[string]int64{"a": 3},
		demands: map[string]demand{
			"a": {need: 6, floor: 6, rev: 3},
			"b": {need: 6, floor: 3, rev: 9},
		}}
	a := &agent{lim: &limit{host: "a", turn: time.Hour}}
	if a.turnOver(v, true) || !a.served.IsZero() {
		t.Fatal("a share below the rule's (3 of 6): the turn has not begun")
	}
	v.shares["a"] = 6
	if a.turnOver(v, false) || a.served.IsZero() {
		t.Fatal("the share is the rule's: the turn begins")
	}
	if a.turnOver(v, true) {
		t.Fatal("a grant within the turn: the host keeps its place")
	}
	a.served = time.Now().Add(-2 * time.Hour)
	if a.turnOver(v, false) {
		t.Fatal("no grant: the host keeps its place")
	}
	if !a.turnOver(v, true) || !a.served.IsZero() {
		t.Fatal("a grant after the turn: the host goes to the back")
	}
	b := &agent{lim: &limit{host: "b", turn: time.Nanosecond}}
	b.served = time.Now().Add(-time.Hour)
	if b.turnOver(v, true) || !b.served.IsZero() {
		t.Fatal("a host not at the front keeps its place")
	}
}

// A policy deadline host's share is taken back only after its claim has
// been seen gone, at the same share, for its TTL; never a finish host's,
// a live host's or this host's own.
func TestOrphansDueAfterTheirTTL(t *testing.T) {
	v := &view{capacity: 9,
		shares:    map[string]int64{"a": 2, "b": 3, "c": 1, "me": 3},
		shareRevs: map[string]int64{"a": 5, "b": 6, "c": 7, "me": 8},
		ttls:      map[string]int64{"a": 3, "b": 3, "me": 3},
		alive:     map[string]bool{"b": true}}
	seen := map[string]orphan{}
	s := time.Second
	if due := orphansDue(v, seen, "me", 10*s); len(due) != 0 {
		t.Fatalf("first seen: %v due, want none", due)
	}
	if _, ok := seen["a"]; !ok || len(seen) != 1 {
		t.Fatalf("followed %v, want a only (b alive, c finish, me)", seen)
	}
	if due := orphansDue(v, seen, "me", 12*s); len(due) != 0 {
		t.Fatalf("2 s of a TTL of 3: %v due", due)
	}
	if got := nextDue(v, seen); got != 13*s {
		t.Fatalf("next due %v, want 13s", got)
	}
	if due := orphansDue(v, seen, "me", 13*s); len(due) != 1 || due[0] != "a" {
		t.Fatalf("after its TTL: %v due, want [a]", due)
	}
	// The share changed (its host back and gone again): followed anew.
	v.shareRevs["a"] = 11
	if due := orphansDue(v, seen, "me", 14*s); len(due) != 0 {
		t.Fatalf("a new share: %v due at once", due)
	}
	if due := orphansDue(v, seen, "me", 16*s); len(due) != 0 {
		t.Fatalf("a new share: %v due before its TTL", due)
	}
	// A claim made and lost between two reads puts ttl/a again.
	v.ttlRevs = map[string]int64{"a": 12}
	if due := orphansDue(v, seen, "me", 30*s); len(due) != 0 {
		t.Fatalf("a claim in between: %v due", due)
	}
	if due := orphansDue(v, seen, "me", 32*s); len(due) != 0 {
		t.Fatalf("a claim in between: %v due before its TTL", due)
	}
	if due := orphansDue(v, seen, "me", 33*s); len(due) != 1 {
		t.Fatalf("a claim in between, then its TTL: %v due", due)
	}
	// Its claim back: no longer followed.
	v.alive["a"] = true
	if orphansDue(v, seen, "me", 20*s); len(seen) != 0 {
		t.Fatalf("a alive again: still followed %v", seen)
	}
}
