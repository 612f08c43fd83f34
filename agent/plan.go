// SPDX-License-Identifier: GPL-2.0

package main

// What etcd holds of one cluster limit, read at one revision, and the
// rule every agent applies to it to find its host's share.  Nothing here
// talks to etcd or the kernel: the rule is tested on its own.

import (
	"sort"
	"time"
)

// A demand is what a host asks for: need, the weight its semaphore holds
// plus what its waiters ask for; floor, the least share with which it
// makes progress (what it holds plus its first waiter's weight).  rev is
// the etcd revision that created its demand key: its place in the
// cluster's queue, which it leaves for the back each time one of its
// waiters is granted.
type demand struct {
	need, floor int64
	rev         int64
}

// A view is the limit in etcd at one revision.
type view struct {
	capacity int64             // the lower of capacity and capacity/next in etcd
	full     int64             // capacity while a lower capacity/next is in force
	next     int64             // capacity/next (set-capacity), or 0
	shares   map[string]int64  // each host's share (absent: 0)
	demands  map[string]demand // hosts whose need is above 0
	alive    map[string]bool   // hosts whose agent holds its claim
	// each share's mod revision; the lease TTL of each policy deadline
	// host (ttl/HOST), in seconds, and that key's mod revision
	shareRevs, ttls, ttlRevs map[string]int64
}

// An orphan is a policy deadline host's share whose claim (alive/HOST) an
// agent saw gone.
type orphan struct {
	rev    int64         // the share's mod revision then
	ttlRev int64         // ttl/HOST's, which each claim puts again
	since  time.Duration // CLOCK_BOOTTIME after the read that saw it
}

// orphansDue follows, in seen, the shares of other policy deadline hosts
// whose claim v (read, its answer back, at now) has not, from the first
// read without the claim on, at the same revisions of the share and of
// ttl/HOST (a claim made and lost between two reads puts ttl/HOST); and
// returns those seen so for their host's TTL: taken back, they free
// nothing that host still lends.  That host's kernel deadline is at most
// its TTL after the send of its last answered renewal, which came before
// its claim went (with the lease it was under), so before since; the
// clocks compared are durations, each host's own.
func orphansDue(v *view, seen map[string]orphan, me string,
	now time.Duration) []string {
	var due []string
	for h, o := range seen {
		if v.alive[h] || v.shares[h] == 0 || v.ttls[h] == 0 ||
			v.shareRevs[h] != o.rev || v.ttlRevs[h] != o.ttlRev {
			delete(seen, h)
		}
	}
	for h, share := range v.shares {
		ttl := v.ttls[h]
		if h == me || share == 0 || ttl == 0 || v.alive[h] {
			continue
		}
		o, ok := seen[h]
		if !ok {
			seen[h] = orphan{rev: v.shareRevs[h],
				ttlRev: v.ttlRevs[h], since: now}
			continue
		}
		if now-o.since >= time.Duration(ttl)*time.Second {
			due = append(due, h)
		}
	}
	sort.Strings(due)
	return due
}

// nextDue is when the first share followed in seen comes due (0: none).
func nextDue(v *view, seen map[string]orphan) time.Duration {
	var first time.Duration
	for h, o := range seen {
		at := o.since + time.Duration(v.ttls[h])*time.Second
		if first == 0 || at < first {
			first = at
		}
	}
	return first
}

// free is the capacity no host has a share of.
func (v *view) free() int64 {
	f := v.capacity
	for _, s := range v.shares {
		f -= s
	}
	return f
}

// targets is each host's share as the rule has it.  When the needs fit,
// every host gets its need.  When they do not: first the host at the front
// of the queue its whole need (up to the capacity: the host whose turn it
// is, see turnOver in main.go, is served whole), then the other hosts'
// floors in queue order, so that the host that waited longest gets its
// first waiter's weight before any other host but the front gets more than
// its own floor; then what is left, shared max-min fairly by what each
// still needs.
// Hosts without a demand get 0.  The targets never add up to more than the
// capacity.
func (v *view) targets() map[string]int64 {
	t := make(map[string]int64, len(v.demands))
	var sum int64
	hosts := make([]string, 0, len(v.demands))
	for h, d := range v.demands {
		hosts = append(hosts, h)
		sum += d.need
	}
	if sum <= v.capacity {
		for h, d := range v.demands {
			t[h] = d.need
		}
		return t
	}
	sort.Slice(hosts, func(i, j int) bool {
		return v.demands[hosts[i]].rev < v.demands[hosts[j]].rev
	})
	left := v.capacity
	for i, h := range hosts {
		f := min64(v.demands[h].floor, left)
		if i == 0 {
			f = min64(v.demands[h].need, left)
		}
		t[h] = f
		left -= f
	}
	// Max-min fair: the smallest wants are met whole, the rest share.
	sort.SliceStable(hosts, func(i, j int) bool {
		return v.demands[hosts[i]].need-t[hosts[i]] <
			v.demands[hosts[j]].need-t[hosts[j]]
	})
	for i, h := range hosts {
		want := v.demands[h].need - t[h]
		even := left / int64(len(hosts)-i)
		g := min64(want, even)
		if g < 0 {
			g = 0
		}
		t[h] += g
		left -= g
	}
	// What integer division left over, in queue order again.
	sort.Slice(hosts, func(i, j int) bool {
		return v.demands[hosts[i]].rev < v.demands[hosts[j]].rev
	})
	for _, h := range hosts {
		if left == 0 {
			break
		}
		g := min64(v.demands[h].need-t[h], left)
		if g > 0 {
			t[h] += g
			left -= g
		}
	}
	return t
}

// front says whether host h is at the front of the queue: its demand key
// is the oldest.
func (v *view) front(h string) bool {
	d, ok := v.demands[h]
	if !ok {
		return false
	}
	for _, o := range v.demands {
		if o.rev < d.rev {
			return false
		}
	}
	return true
}

// othersWait says whether another host lacks capacity: an idle share then
// goes back at once, not after the hold time.
func (v *view) othersWait(me string) bool {
	for h, d := range v.demands {
		if h != me && d.need > v.shares[h] {
			return true
		}
	}
	return false
}

func min64(a, b int64) int64 {
	if a < b {
		return a
	}
	return b
}
