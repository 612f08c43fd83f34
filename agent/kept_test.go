// SPDX-License-Identifier: GPL-2.0

package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// The kept view takes events as read takes keys: a bad share stops the
// looks until it is put right, a bad demand is left out, a deleted key goes,
// a claim made is no news, capacity/next lowers the capacity; an event at or
// below the revision of the watch's last answer is a gap and changes nothing.
func TestKeptViewEvents(t *testing.T) {
	s := &store{prefix: "/p/"}
	s.load(&s.kept, []keyValue{
		{key: "/p/capacity", value: "6", mod: 1, create: 1},
		{key: "/p/share/a", value: "2", mod: 3, create: 3},
		{key: "/p/demand/a", value: "2 1", mod: 4, create: 4},
	}, 5)
	news := func(evs ...keyValue) bool {
		t.Helper()
		n, err := s.applyEvents(evs)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if news(keyValue{key: "/p/alive/b", mod: 6, create: 6}) {
		t.Error("a claim made is news")
	}
	if !news(keyValue{key: "/p/share/b", value: "x", mod: 7, create: 7}) {
		t.Error("a share put is no news")
	}
	if _, _, err := s.snapshot(&s.kept); err == nil ||
		!strings.Contains(err.Error(), "/p/share/b") {
		t.Errorf("a share that does not parse: %v", err)
	}
	news(keyValue{key: "/p/share/b", value: "1", mod: 8, create: 7},
		keyValue{key: "/p/demand/a", value: "bad", mod: 8, create: 4},
		keyValue{key: "/p/capacity/next", value: "4", mod: 8, create: 8})
	v, rev, err := s.snapshot(&s.kept)
	if err != nil || rev != 8 || v.shares["b"] != 1 || v.free() != 1 ||
		len(v.demands) != 0 || !v.alive["b"] || v.capacity != 4 ||
		v.full != 6 {
		t.Fatalf("at 8: %+v, %d, %v", v, rev, err)
	}
	news(keyValue{key: "/p/alive/b", del: true, mod: 9})
	if _, err := s.applyEvents([]keyValue{{key: "/p/share/a", value: "9",
		mod: 9, create: 3}}); !errors.Is(err, errGap) {
		t.Errorf("an event at the watch's last revision: %v", err)
	}
	if v, rev, _ := s.snapshot(&s.kept); rev != 9 || v.shares["a"] != 2 ||
		v.alive["b"] {
		t.Errorf("at 9: %+v, %d", v, rev)
	}
}

// A look waits for the view to reach the agent's last write, and after a
// failed growth for a change of a share after the growth's view (or the
// failure's revision); its context bounds the wait.
func TestLookWaits(t *testing.T) {
	s := &store{prefix: "/p/"}
	s.load(&s.kept, []keyValue{{key: "/p/capacity", value: "6", mod: 1}}, 5)
	s.wrote(7)
	ctx, cancel := context.WithTimeout(context.Background(),
		50*time.Millisecond)
	defer cancel()
	if _, _, err := s.look(ctx); err == nil {
		t.Fatal("a look before the view reached the agent's write")
	}
	done := make(chan int64, 1)
	go func() {
		_, rev, _ := s.look(context.Background())
		done <- rev
	}()
	time.Sleep(20 * time.Millisecond)
	s.applyEvents([]keyValue{{key: "/p/demand/h", value: "1 1", mod: 7,
		create: 7}})
	if rev := waitLook(t, done); rev != 7 {
		t.Fatalf("looked at %d, not 7", rev)
	}
	// a growth decided at 7 failed at 12: a demand changed at 9 does not
	// end the wait, a share changed at 10 does
	s.failed(7, 12)
	go func() {
		_, rev, _ := s.look(context.Background())
		done <- rev
	}()
	s.applyEvents([]keyValue{{key: "/p/demand/g", value: "1 1", mod: 9,
		create: 9}})
	select {
	case rev := <-done:
		t.Fatalf("looked at %d before the share's change", rev)
	case <-time.After(30 * time.Millisecond):
	}
	s.applyEvents([]keyValue{{key: "/p/share/g", value: "1", mod: 10,
		create: 10}})
	if rev := waitLook(t, done); rev != 10 {
		t.Fatalf("looked at %d, not 10", rev)
	}
}

// waitLook is the revision a look sends on done, within 2 s.
func waitLook(t *testing.T, done chan int64) int64 {
	t.Helper()
	select {
	case rev := <-done:
		return rev
	case <-time.After(2 * time.Second):
		t.Fatal("the look still waits after 2 s")
	}
	return 0
}

// A look that waited past viewWait reads the prefix (resync) and may take
// the view past its watch: the events the watch then brings at or below
// the view's revision are in the view already and are skipped, not a gap;
// the ones after it are taken in.  An event at or below the revision the
// watch last brought (or was started after) is still a gap.
func TestKeptViewAheadOfWatch(t *testing.T) {
	s := &store{prefix: "/p/"}
	capacity := keyValue{key: "/p/capacity", value: "6", mod: 1, create: 1}
	s.load(&s.kept, []keyValue{capacity}, 5)
	if rev := s.watchFrom(); rev != 5 {
		t.Fatalf("a watch from %d, not after 5", rev)
	}
	gap := func(why string, evs ...keyValue) {
		t.Helper()
		if _, err := s.applyEvents(evs); !errors.Is(err, errGap) {
			t.Errorf("%s: %v", why, err)
		}
	}
	news := func(want bool, evs ...keyValue) {
		t.Helper()
		n, err := s.applyEvents(evs)
		if err != nil || n != want {
			t.Fatalf("events at %d..%d: news %v, %v", evs[0].mod,
				evs[len(evs)-1].mod, n, err)
		}
	}
	gap("an event at the revision the watch started after",
		keyValue{key: "/p/share/a", value: "1", mod: 5, create: 5})
	// etcd: share/a 2 at 6, share/b 1 at 7, alive/c at 8, share/a 3 at
	// 9; a look reads at 7 before the watch brought 6
	s.load(&s.kept, []keyValue{capacity,
		{key: "/p/share/a", value: "2", mod: 6, create: 6},
		{key: "/p/share/b", value: "1", mod: 7, create: 7}}, 7)
	news(false, keyValue{key: "/p/share/a", value: "2", mod: 6, create: 6})
	// share/b is in the view (a share taken in is news), the claim is
	// no news
	news(false, keyValue{key: "/p/share/b", value: "1", mod: 7, create: 7},
		keyValue{key: "/p/alive/c", mod: 8, create: 8})
	news(true, keyValue{key: "/p/share/a", value: "3", mod: 9, create: 6})
	gap("an event at the revision the watch last brought",
		keyValue{key: "/p/share/a", value: "4", mod: 9, create: 6})
	gap("an answer going back",
		keyValue{key: "/p/share/a", value: "4", mod: 11, create: 6},
		keyValue{key: "/p/share/b", value: "4", mod: 10, create: 7})
	v, rev, err := s.snapshot(&s.kept)
	if err != nil || rev != 9 || v.shares["a"] != 3 || v.shares["b"] != 1 ||
		!v.alive["c"] {
		t.Fatalf("at 9: %+v, %d, %v", v, rev, err)
	}
}

// A read older than the view (a look's, while the watch moved the view
// on) is not loaded: the view would go back, and its watch, already past
// the read, would never bring again the changes it lost.
func TestKeptViewKeepsNewerThanRead(t *testing.T) {
	s := &store{prefix: "/p/"}
	capacity := keyValue{key: "/p/capacity", value: "6", mod: 1, create: 1}
	s.load(&s.kept, []keyValue{capacity}, 5)
	s.applyEvents([]keyValue{{key: "/p/share/a", value: "2", mod: 6,
		create: 6}})
	s.applyEvents([]keyValue{{key: "/p/share/b", value: "1", mod: 7,
		create: 7}})
	s.load(&s.kept, []keyValue{capacity,
		{key: "/p/share/a", value: "2", mod: 6, create: 6}}, 6)
	if _, err := s.applyEvents([]keyValue{{key: "/p/share/c", value: "1",
		mod: 8, create: 8}}); err != nil {
		t.Fatal(err)
	}
	v, rev, err := s.snapshot(&s.kept)
	if err != nil || rev != 8 || len(v.shares) != 3 || v.free() != 2 {
		t.Fatalf("at 8: %+v, %d, %v", v, rev, err)
	}
}
