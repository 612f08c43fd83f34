// SPDX-License-Identifier: GPL-2.0

package main

// The limit as the agent keeps it from etcd's watch: one read of the
// prefix when the agent starts (and on each resync), then every event of
// the watch from that read's revision on, applied in revision order
// (main.go's follow; those a look's read already took in are skipped:
// applyEvents).  A look decides from this view, not from a read:
// etcd is asked only to commit.  The view is at a revision: every change
// under the prefix up to it is in, none after it (the revision of the read,
// then of the last event applied; never a watch answer's header revision,
// which etcd 3.4 may give ahead of events it has not sent yet).
//
// Why a view that is behind etcd cannot over-commit: a share grows only in
// a transaction that finds no share/ key, nor capacity nor capacity/next,
// changed or created after the revision of the view the growth was computed
// from (growShare).  A view at revision R is exactly etcd's keys under the
// prefix at R; if the transaction succeeds, every share and the capacity
// in force when it commits are those of R, but for shares deleted since,
// which only free capacity (and a capacity/next deleted by hand, which only
// raises it).  So the shares it commits add up to what they did at R plus
// the growth, which is no more than what was free at R.  What the view
// misses of what came after R — demands, claims, ttl/ keys — moves no share.
// A stale view costs a failed transaction, never an excess; after one, the
// next decision waits until the view has taken in the change that failed it
// (look), and after the agent's own write, until the view has reached its
// revision.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A keptView is the limit's keys as the watch brought them.
type keptView struct {
	mu     sync.Mutex
	loaded bool  // a read of the prefix is in
	rev    int64 // every change under the prefix up to rev is in; never falls
	// watchRev: the revision of the last event the running watch brought,
	// or the view's revision it was started after (watchFrom)
	watchRev int64
	// grew: the revision of the last change of a share/ key, capacity or
	// capacity/next taken in (a read's revision for a read)
	grew int64
	// capacity and capacity/next as etcd has them (0: missing, or one
	// that does not parse: in bad)
	capacity, next int64
	// share/ keys and the capacity whose values do not parse: nothing
	// grows while one is there (the look fails, as read's did)
	bad     map[string]error
	v       view          // shares, demands, alive, ttls and their revisions
	snap    *view         // what snapshot last gave, nil after a change
	moved   chan struct{} // closed when rev moves on, then made anew
	resyncs int           // reads of the prefix after the first
}

// load replaces what the view holds with a read of the prefix at rev:
// each of kvs applied by put; unless the view is already past rev (a
// look's read, while the watch took the view on): it would go back, and
// the watch, past rev, would not bring again what it took out.
func (s *store) load(k *keptView, kvs []keyValue, rev int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.loaded {
		k.resyncs++
	}
	if k.loaded && rev < k.rev {
		return
	}
	k.capacity, k.next = 0, 0
	k.bad = map[string]error{}
	k.v = view{shares: map[string]int64{}, demands: map[string]demand{},
		alive: map[string]bool{}, shareRevs: map[string]int64{},
		ttls: map[string]int64{}, ttlRevs: map[string]int64{}}
	for _, kv := range kvs {
		s.applyLocked(k, kv)
	}
	k.loaded, k.rev, k.grew = true, rev, rev
	k.movedLocked()
}

// A keyValue is a key under the prefix as a read gives it, or an event of
// the watch (del: a delete; mod is then the delete's revision).
type keyValue struct {
	key, value  string
	del         bool
	mod, create int64
}

// movedLocked tells the waiters of look that the view changed.
func (k *keptView) movedLocked() {
	k.snap = nil
	if k.moved != nil {
		close(k.moved)
	}
	k.moved = make(chan struct{})
}

// parseValue is the number a key of the limit holds (a demand: its need
// and floor), or why it is not one of 0 or more (of 1 or more for the
// capacity and capacity/next).
func parseValue(rest, value string) (n, floor int64, err error) {
	if strings.HasPrefix(rest, "demand/") {
		_, err = fmt.Sscanf(value, "%d %d", &n, &floor)
	} else {
		n, err = strconv.ParseInt(value, 10, 64)
	}
	if err == nil && n < 0 {
		err = errors.New("below 0")
	}
	if err == nil && n == 0 && strings.HasPrefix(rest, "capacity") {
		err = errors.New("0")
	}
	return n, floor, err
}

// applyLocked takes kv into k: true if it changes what a look uses (a
// claim made is no news: its ttl/HOST is).  A share or a capacity that
// does not parse is kept in bad until it is put right or deleted; any
// other key that does not parse — a demand, a ttl/, a capacity/next, a key
// of no known kind — is left out and logged once for each value (skip).
func (s *store) applyLocked(k *keptView, kv keyValue) bool {
	rest := strings.TrimPrefix(kv.key, s.prefix)
	k.snap = nil
	if strings.HasPrefix(rest, "alive/") {
		h := rest[len("alive/"):]
		if kv.del {
			delete(k.v.alive, h)
			return true
		}
		k.v.alive[h] = true
		return false
	}
	var n, floor int64
	var err error
	if !kv.del {
		n, floor, err = parseValue(rest, kv.value)
	}
	if rest == "capacity" || strings.HasPrefix(rest, "share/") {
		// what is free cannot be known without it
		delete(k.bad, kv.key)
		if err != nil {
			k.bad[kv.key] = fmt.Errorf("%s: %q: %v", kv.key,
				kv.value, err)
		}
	} else if err != nil {
		s.skip(kv.key, kv.value, err)
	}
	ok := !kv.del && err == nil
	if strings.HasPrefix(rest, "share/") || strings.HasPrefix(rest, "capacity") {
		k.grew = kv.mod
	}
	switch {
	case strings.HasPrefix(rest, "demand/"):
		h := rest[len("demand/"):]
		old, had := k.v.demands[h]
		if !ok {
			delete(k.v.demands, h)
			return had
		}
		d := demand{need: n, floor: floor, rev: kv.create}
		k.v.demands[h] = d
		return !had || old != d
	case rest == "capacity":
		old := k.capacity
		k.capacity = 0
		if ok {
			k.capacity = n
		}
		return old != k.capacity || err != nil
	case rest == "capacity/next":
		old := k.next
		k.next = 0
		if ok {
			k.next = n
		}
		return old != k.next
	case strings.HasPrefix(rest, "share/"):
		h := rest[len("share/"):]
		delete(k.v.shares, h)
		delete(k.v.shareRevs, h)
		if ok {
			k.v.shares[h], k.v.shareRevs[h] = n, kv.mod
		}
		return true
	case strings.HasPrefix(rest, "ttl/"):
		h := rest[len("ttl/"):]
		delete(k.v.ttls, h)
		delete(k.v.ttlRevs, h)
		if ok {
			k.v.ttls[h], k.v.ttlRevs[h] = n, kv.mod
		}
		return true
	}
	return false
}

// snapshot is the view as a look uses it, and its revision: an error if a
// share or the capacity does not parse, or there is no capacity.  What it
// gives is not changed after (a change makes a new one).
func (s *store) snapshot(k *keptView) (*view, int64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.bad) > 0 {
		keys := make([]string, 0, len(k.bad))
		for key := range k.bad {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		return nil, 0, k.bad[keys[0]]
	}
	if k.capacity == 0 {
		return nil, 0, fmt.Errorf("%scapacity: missing", s.prefix)
	}
	if k.snap == nil {
		v := &view{capacity: k.capacity, next: k.next,
			shares:    make(map[string]int64, len(k.v.shares)),
			demands:   make(map[string]demand, len(k.v.demands)),
			alive:     make(map[string]bool, len(k.v.alive)),
			shareRevs: make(map[string]int64, len(k.v.shareRevs)),
			ttls:      make(map[string]int64, len(k.v.ttls)),
			ttlRevs:   make(map[string]int64, len(k.v.ttlRevs))}
		for h, n := range k.v.shares {
			v.shares[h] = n
		}
		for h, d := range k.v.demands {
			v.demands[h] = d
		}
		for h := range k.v.alive {
			v.alive[h] = true
		}
		for h, n := range k.v.shareRevs {
			v.shareRevs[h] = n
		}
		for h, n := range k.v.ttls {
			v.ttls[h] = n
		}
		for h, n := range k.v.ttlRevs {
			v.ttlRevs[h] = n
		}
		if v.next > 0 && v.next < v.capacity {
			v.full, v.capacity = v.capacity, v.next
		}
		k.snap = v
	}
	return k.snap, k.rev, nil
}

// wrote records the revision of this agent's own write under the prefix:
// the next decision waits until the view has reached it.
func (s *store) wrote(rev int64) {
	if rev > s.want {
		s.want = rev
	}
}

// failed records a transaction of this agent, decided from the view at
// rev, that failed at revision at because a share (or the capacity) had
// changed since rev: the next decision waits until the view has reached
// at, or has taken in a change of a share or the capacity after rev (the
// one that failed it: at may be a revision of another limit's key, which
// this view never sees).
func (s *store) failed(rev, at int64) {
	s.failRev, s.failAt = rev, at
}

// look is the view a decision is made from, and its revision, once the
// kept view has reached the revision of this agent's last write and taken
// in what failed its last transaction (wrote, failed); an error if ctx
// ends first (the look's: ttl=), or if the view has a share or a
// capacity that does not parse.  No request to etcd, unless the watch has
// not brought what the look waits for within viewWait: the prefix is read
// again then (resync), once.
func (s *store) look(ctx context.Context) (*view, int64, error) {
	k := &s.kept
	var late <-chan time.Time
	for {
		k.mu.Lock()
		ready := k.loaded && k.rev >= s.want && (s.failAt == 0 ||
			k.rev >= s.failAt || k.grew > s.failRev)
		moved, rev := k.moved, k.rev
		k.mu.Unlock()
		if ready {
			break
		}
		if late == nil {
			t := time.NewTimer(viewWait)
			defer t.Stop()
			late = t.C
		}
		select {
		case <-moved:
		case <-late:
			// (a watch that hangs on a connection not yet seen
			// dead, or still reconnecting: the read is at or
			// after what was waited for)
			if err := s.resync(ctx); err != nil {
				return nil, 0, err
			}
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("the watch of etcd has not "+
				"brought revision %d (at %d): %w", s.want, rev,
				ctx.Err())
		}
	}
	s.failRev, s.failAt = 0, 0
	v, rev, err := s.snapshot(k)
	if err != nil {
		return nil, 0, err
	}
	s.last = readView{v, rev, bootTime()}
	return v, rev, nil
}

// viewWait is how long a look waits for the watch to bring what it waits
// for (look) before it reads the prefix instead: a watch brings a change
// in milliseconds.
const viewWait = time.Second

// watchFrom is the revision a new watch of the prefix starts after: the
// kept view's (follow).
func (s *store) watchFrom() int64 {
	s.kept.mu.Lock()
	defer s.kept.mu.Unlock()
	s.kept.watchRev = s.kept.rev
	return s.kept.rev
}

// keptRev is the revision the kept view is at (0: nothing loaded yet).
func (s *store) keptRev() int64 {
	s.kept.mu.Lock()
	defer s.kept.mu.Unlock()
	return s.kept.rev
}
