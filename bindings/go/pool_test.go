// SPDX-License-Identifier: LGPL-2.1-or-later

package wsem

// The pool (EnablePool): the fast path makes no kernel grant, a waiter of
// another process makes the pool give its spare weight back (an idle pool
// through its watcher, a busy one at its release), a pooled process killed
// leaves nothing held, and the fallbacks and errors.  x/sync's scenarios
// run with a pool too (semaphore_test.go, -wsem.pool).

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// grants is the number of kernel grants the semaphore has made.
func grants(t *testing.T, w *Weighted) int64 {
	t.Helper()
	st := mustStat(t, w)
	return st.GrantsAtOnce + st.GrantsWaited
}

func mustPool(t *testing.T, w *Weighted, maxSpare int64) {
	t.Helper()
	if err := w.EnablePool(maxSpare); err != nil {
		t.Fatal(err)
	}
}

// The first Acquire takes a batch from the kernel; the Acquires,
// TryAcquires and Releases after it are served from spare weight, and the
// semaphore's grant counters do not move.
func TestPoolFastPathMakesNoGrant(t *testing.T) {
	ctx := context.Background()
	sem := anon(t, 4)
	mustPool(t, sem, 4)
	if err := sem.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	st := mustStat(t, sem)
	if st.Used != 4 || st.Held != 1 || st.Spare != 3 {
		t.Fatalf("after the first Acquire(1): used %d, held %d, spare %d; "+
			"want 4, 1, 3 (a batch of 3)", st.Used, st.Held, st.Spare)
	}
	g := grants(t, sem)
	for i := 0; i < 100; i++ {
		if err := sem.Acquire(ctx, 2); err != nil {
			t.Fatal(err)
		}
		if !sem.TryAcquire(1) {
			t.Fatal("TryAcquire(1) with 1 spare failed")
		}
		if sem.TryAcquire(1) {
			t.Fatal("TryAcquire(1) beyond the capacity succeeded")
		}
		sem.Release(3)
	}
	if got := grants(t, sem); got != g {
		t.Errorf("the fast path made %d kernel grants, want 0", got-g)
	}
	sem.Release(1)
	st = mustStat(t, sem)
	if st.Used != 4 || st.Held != 0 || st.Spare != 4 {
		t.Errorf("all released: used %d, held %d, spare %d; want 4, 0, 4",
			st.Used, st.Held, st.Spare)
	}
}

// What the pool keeps spare is bounded by maxSpare; 0 keeps nothing.
func TestPoolMaxSpare(t *testing.T) {
	ctx := context.Background()
	sem := anon(t, 10)
	mustPool(t, sem, 2)
	if err := sem.Acquire(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if st := mustStat(t, sem); st.Used != 7 || st.Spare != 2 {
		t.Errorf("Acquire(5): used %d, spare %d; want 7 (a batch of 2), 2",
			st.Used, st.Spare)
	}
	sem.Release(5)
	if st := mustStat(t, sem); st.Used != 2 || st.Spare != 2 {
		t.Errorf("Release(5): used %d, spare %d; want 2, 2",
			st.Used, st.Spare)
	}
	none := anon(t, 10)
	mustPool(t, none, 0)
	g := grants(t, none)
	for i := 0; i < 3; i++ {
		if err := none.Acquire(ctx, 3); err != nil {
			t.Fatal(err)
		}
		none.Release(3)
	}
	if st := mustStat(t, none); st.Used != 0 || st.Spare != 0 ||
		grants(t, none)-g != 3 {
		t.Errorf("maxSpare 0: used %d, spare %d, %d grants; want 0, 0, 3",
			st.Used, st.Spare, grants(t, none)-g)
	}
}

// A waiter in another process, for the whole capacity, is granted while
// the pool's goroutines are idle: the watcher gives the spare weight
// back on the demand event.  Then, with a goroutine holding 1, it waits
// until that Release, which gives everything back.
func TestPoolGivesWayToAnotherProcess(t *testing.T) {
	ctx := context.Background()
	sem, name := named(t, 4)
	mustPool(t, sem, 4)
	if err := sem.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	sem.Release(1)
	if st := mustStat(t, sem); st.Used != 4 || st.Spare != 4 {
		t.Fatalf("idle pool: used %d, spare %d; want 4, 4",
			st.Used, st.Spare)
	}
	p := startHelper(t, "go", name, "4")
	select {
	case <-p.granted:
	case <-time.After(10 * time.Second):
		t.Fatalf("a waiter for 4 was not granted in 10 s beside an "+
			"idle pool: %+v", mustStat(t, sem))
	}
	if sem.TryAcquire(1) {
		t.Error("TryAcquire(1) succeeded while the other process " +
			"holds the whole capacity")
	}
	if st := mustStat(t, sem); st.Spare != 0 {
		t.Errorf("spare %d while the other process holds 4", st.Spare)
	}
	p.finish(t)

	// Busy: held 1, spare 3.  The waiter gets the 3 from the watcher
	// and waits for the 1 until the Release.
	if err := sem.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	p = startHelper(t, "go", name, "4")
	waitWaiters(t, sem, 1)
	eventually(t, "the spare weight to go back", func() bool {
		return mustStat(t, sem).Spare == 0
	})
	time.Sleep(300 * time.Millisecond)
	if p.isGranted() {
		t.Fatal("granted 4 while the pool's goroutine holds 1")
	}
	sem.Release(1)
	select {
	case <-p.granted:
	case <-time.After(10 * time.Second):
		t.Fatalf("the Release did not give the weight back: %+v",
			mustStat(t, sem))
	}
	if st := mustStat(t, sem); st.Used != 4 || st.Spare != 0 {
		t.Errorf("the other holds 4: used %d, spare %d; want 4, 0",
			st.Used, st.Spare)
	}
	p.finish(t)
}

// A pooled process whose goroutines acquire and release without a pause
// does not starve a waiter of another process for the whole capacity:
// the pool's acquires see it on the page and queue behind it.
func TestPoolBusyGivesWay(t *testing.T) {
	sem, name := named(t, 4)
	p := startHelper(t, "pool", name, "3", "4")
	select {
	case <-p.granted:
	case <-time.After(20 * time.Second):
		t.Fatal("the pooled helper did not start")
	}
	defer killChildren(p)
	for i := 0; i < 3; i++ {
		ctx, cancel := context.WithTimeout(context.Background(),
			20*time.Second)
		err := sem.Acquire(ctx, 4)
		cancel()
		if err != nil {
			t.Fatalf("Acquire(4) beside a busy pool: %v (%+v)", err,
				mustStat(t, sem))
		}
		if st := mustStat(t, sem); st.Used != 4 || st.Held != 4 {
			t.Errorf("used %d, held %d; want 4, 4", st.Used, st.Held)
		}
		sem.Release(4)
	}
}

// Pooled processes of several goroutines, each with a command running
// beside it that outlives it, are SIGKILLed at random moments: nothing
// stays held or queued, and their pools did hold weight when killed.
func TestPoolKilledHoldsNothing(t *testing.T) {
	sem, name := named(t, 4)
	rounds := 10
	if testing.Short() {
		rounds = 3
	}
	sawHeld := false
	for r := 0; r < rounds; r++ {
		var ps []*proc
		for i := 0; i < 2; i++ {
			p := startHelper(t, "pool", name, "3", "4")
			select {
			case <-p.granted:
			case <-time.After(20 * time.Second):
				t.Fatal("a pooled helper did not start")
			}
			ps = append(ps, p)
		}
		time.Sleep(time.Duration(rand.Int63n(int64(20 * time.Millisecond))))
		if mustStat(t, sem).Used > 0 {
			sawHeld = true
		}
		for _, p := range ps {
			p.cmd.Process.Kill()
			p.cmd.Wait()
			// Their commands live on until the check is done.
			defer killChildren(p)
		}
		eventually(t, "nothing held after the kills", func() bool {
			st := mustStat(t, sem)
			return st.Used == 0 && st.Waiters == 0
		})
	}
	if !sawHeld {
		t.Error("the pooled helpers never held anything: nothing tested")
	}
}

// helperPool (NAME G MAXSPARE): a command running beside it (sleep, which
// must not inherit the pool's handle: its pid is killed by the test's
// cleanup through the line "child PID"), then G goroutines acquiring and
// releasing 1 through a pool for ever; "granted" once each went round.
func helperPool(name string, g, maxSpare int64) error {
	w, err := Open(name)
	if err != nil {
		return err
	}
	if err := w.EnablePool(maxSpare); err != nil {
		return err
	}
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		return err
	}
	fmt.Println("child", child.Process.Pid)
	var started sync.WaitGroup
	for i := int64(0); i < g; i++ {
		started.Add(1)
		go func() {
			first := true
			for {
				if err := w.Acquire(context.Background(), 1); err != nil {
					fmt.Fprintln(os.Stderr, "helper: pool:", err)
					os.Exit(1)
				}
				w.Release(1)
				if first {
					started.Done()
					first = false
				}
			}
		}()
	}
	started.Wait()
	fmt.Println("granted")
	select {}
}

// killChildren kills the "child PID" commands p announced.
func killChildren(p *proc) {
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return
			}
			if f := strings.Fields(l); len(f) == 2 && f[0] == "child" {
				if pid, err := strconv.Atoi(f[1]); err == nil {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		default:
			return
		}
	}
}

// On a child semaphore the pool serves from spare while nobody is queued
// in the tree, and an idle one gives way to a sibling's request that the
// parent holds up, which the child's own page does not show: the tree's
// page, and the child's demand event when its flags change.
func TestPoolOnChild(t *testing.T) {
	ctx := context.Background()
	parent := anon(t, 4)
	child, err := parent.CreateChild("", 4, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Close() })
	sib, err := parent.CreateChild("", 4, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sib.Close() })
	mustPool(t, child, 4)
	if err := child.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	child.Release(1)
	g := grants(t, child)
	for i := 0; i < 5; i++ {
		if err := child.Acquire(ctx, 1); err != nil {
			t.Fatal(err)
		}
		child.Release(1)
	}
	if d := grants(t, child) - g; d != 0 {
		t.Errorf("5 Acquires from spare on a child made %d kernel grants", d)
	}
	if st := mustStat(t, parent); st.Used != 4 {
		t.Fatalf("the parent's used is %d with the pool's spare, want 4",
			st.Used)
	}
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := sib.Acquire(tctx, 4); err != nil {
		t.Fatalf("the sibling's request for the parent's 4: %v "+
			"(the idle pool did not give way)", err)
	}
	if st := mustStat(t, child); st.Used != 0 {
		t.Errorf("the child's used is %d after the pool gave way", st.Used)
	}
	sib.Release(4)
}

// EnablePool's errors: a negative or too large maxSpare (EINVAL, naming
// maxSpare), a second pool (EEXIST), a closed Weighted (ErrClosed); and
// after Close, Acquire fails, TryAcquire is false, Release does nothing.
func TestPoolErrors(t *testing.T) {
	sem := anon(t, 4)
	for _, bad := range []int64{-1, 1<<62 + 1} {
		err := sem.EnablePool(bad)
		if !errors.Is(err, syscall.EINVAL) ||
			!strings.Contains(err.Error(), "maxSpare") {
			t.Errorf("EnablePool(%d): %v, want EINVAL naming maxSpare",
				bad, err)
		}
	}
	mustPool(t, sem, 2)
	if err := sem.EnablePool(2); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("a second EnablePool: %v, want EEXIST", err)
	}
	if err := sem.Acquire(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	sem.Close()
	if err := sem.Acquire(context.Background(), 1); err != ErrClosed {
		t.Errorf("Acquire after Close: %v, want ErrClosed", err)
	}
	if sem.TryAcquire(1) {
		t.Error("TryAcquire after Close succeeded")
	}
	sem.Release(1)
	if err := sem.EnablePool(1); err != ErrClosed {
		t.Errorf("EnablePool after Close: %v, want ErrClosed", err)
	}
}
