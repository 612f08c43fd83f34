// SPDX-License-Identifier: LGPL-2.1-or-later

package wsem

// The scenarios of golang.org/x/sync/semaphore's own tests, written anew
// for a Weighted: the same situations and the same expectations, except
// where the package documentation says this one differs (an Acquire
// heavier than the capacity fails at once).  Each also checks what only a
// kernel semaphore can tell: that nothing stays held or queued after it.
//
// With -wsem.pool=N (go_test.sh's second run) every scenario runs on a
// Weighted with EnablePool(N): the same expectations hold, and "nothing
// held" means nothing but the pool's spare weight (Stat's Spare).

import (
	"context"
	"errors"
	"flag"
	"math/rand"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

var poolFlag = flag.Int64("wsem.pool", -1,
	"run x/sync's scenarios on Weighteds with EnablePool(`N`) (-1: none)")

// xanon is anon, with a pool if -wsem.pool asks for one.
func xanon(t *testing.T, n int64) *Weighted {
	t.Helper()
	w := anon(t, n)
	if *poolFlag >= 0 {
		if err := w.EnablePool(*poolFlag); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// idle checks that the semaphore of w is back to nothing held, nobody
// queued: nothing used but what w's pool keeps spare.
func idle(t *testing.T, w *Weighted) {
	t.Helper()
	eventually(t, "the semaphore is idle", func() bool {
		st := mustStat(t, w)
		return st.Used == st.Spare && st.Waiters == 0 && st.Held == 0
	})
}

// workers is how many goroutines the hammering tests run: GOMAXPROCS, as
// in x/sync, but at least 4 so that a 2-CPU guest still has a queue.
func workers() int {
	if n := runtime.GOMAXPROCS(0); n > 4 {
		return n
	}
	return 4
}

// Goroutine i acquires weight i (0 included) over and over, holding it for
// a random moment; the weight in use never goes above the capacity.
func TestWeighted(t *testing.T) {
	n := workers()
	loops := 2000 / n
	if testing.Short() {
		loops /= 10
	}
	sem := xanon(t, int64(n))
	var inUse, most int64
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(w int64) {
			defer wg.Done()
			for j := 0; j < loops; j++ {
				if err := sem.Acquire(context.Background(), w); err != nil {
					t.Error(err)
					return
				}
				u := atomic.AddInt64(&inUse, w)
				for m := atomic.LoadInt64(&most); u > m; m = atomic.LoadInt64(&most) {
					if atomic.CompareAndSwapInt64(&most, m, u) {
						break
					}
				}
				time.Sleep(time.Duration(rand.Int63n(int64(100 * time.Microsecond))))
				atomic.AddInt64(&inUse, -w)
				sem.Release(w)
			}
		}(int64(i))
	}
	wg.Wait()
	if most > int64(n) {
		t.Errorf("%d units in use at once, capacity %d", most, n)
	}
	idle(t, sem)
}

// Releasing what was never acquired panics.
func TestWeightedPanic(t *testing.T) {
	sem := xanon(t, 1)
	defer func() {
		if recover() == nil {
			t.Fatal("Release of an unheld unit did not panic")
		}
	}()
	sem.Release(1)
}

// Releasing more than held panics and releases nothing.
func TestWeightedPanicKeepsHeld(t *testing.T) {
	sem := xanon(t, 4)
	if !sem.TryAcquire(2) {
		t.Fatal("TryAcquire(2) failed")
	}
	func() {
		defer func() { recover() }()
		sem.Release(3)
		t.Error("Release(3) with 2 held did not panic")
	}()
	if st := mustStat(t, sem); st.Used-st.Spare != 2 || st.Held != 2 {
		t.Errorf("after the panic: used %d (%d spare), held %d, want 2, 2",
			st.Used, st.Spare, st.Held)
	}
}

func TestWeightedTryAcquire(t *testing.T) {
	ctx := context.Background()
	sem := xanon(t, 2)
	var got []bool
	sem.Acquire(ctx, 1)
	got = append(got, sem.TryAcquire(1))
	got = append(got, sem.TryAcquire(1))
	sem.Release(2)
	got = append(got, sem.TryAcquire(1))
	sem.Acquire(ctx, 1)
	got = append(got, sem.TryAcquire(1))
	want := []bool{true, false, true, false}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("try %d: got %v, want %v", i, got[i], want[i])
		}
	}
	sem.Release(2)
	idle(t, sem)
}

// Acquire with a short timeout succeeds where the units are free and fails
// with DeadlineExceeded where they are not.
func TestWeightedAcquire(t *testing.T) {
	ctx := context.Background()
	sem := xanon(t, 2)
	try := func(n int64) bool {
		ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		err := sem.Acquire(ctx, n)
		if err != nil && err != context.DeadlineExceeded {
			t.Errorf("Acquire: %v", err)
		}
		return err == nil
	}
	var got []bool
	sem.Acquire(ctx, 1)
	got = append(got, try(1))
	got = append(got, try(1))
	sem.Release(2)
	got = append(got, try(1))
	sem.Acquire(ctx, 1)
	got = append(got, try(1))
	want := []bool{true, false, true, false}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("try %d: got %v, want %v", i, got[i], want[i])
		}
	}
	sem.Release(2)
	idle(t, sem)
}

// An Acquire that can never succeed does not hold up the others.  x/sync
// parks it until ctx is done; here the kernel refuses it at once (EINVAL).
func TestWeightedDoesntBlockIfTooBig(t *testing.T) {
	const n = 2
	sem := xanon(t, n)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tooBig := make(chan error, 1)
	go func() { tooBig <- sem.Acquire(ctx, n+1) }()

	var wg sync.WaitGroup
	for i := 0; i < n*3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sem.Acquire(ctx, 1); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Millisecond)
			sem.Release(1)
		}()
	}
	wg.Wait()
	select {
	case err := <-tooBig:
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("Acquire(%d) of capacity %d: %v, want EINVAL",
				n+1, n, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Acquire(%d) of capacity %d still blocks", n+1, n)
	}
	idle(t, sem)
}

// Goroutines that take turns with one unit each do not starve one
// Acquire of the whole capacity: it queues, and no newcomer overtakes it.
func TestLargeAcquireDoesntStarve(t *testing.T) {
	ctx := context.Background()
	n := int64(workers())
	sem := xanon(t, n)
	var running int32 = 1
	var wg sync.WaitGroup
	for i := n; i > 0; i-- {
		if err := sem.Acquire(ctx, 1); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for atomic.LoadInt32(&running) == 1 {
				time.Sleep(time.Millisecond)
				sem.Release(1)
				if err := sem.Acquire(ctx, 1); err != nil {
					t.Error(err)
					return
				}
			}
			sem.Release(1)
		}()
	}
	done := make(chan error, 1)
	go func() { done <- sem.Acquire(ctx, n) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("Acquire(%d) starved", n)
	}
	atomic.StoreInt32(&running, 0)
	sem.Release(n)
	wg.Wait()
	idle(t, sem)
}

// go#37852: a waiter at the head of the queue that gives up lets the one
// behind it in, when that one fits.
func TestAllocCancelDoesntStarve(t *testing.T) {
	sem := xanon(t, 10)
	// One unit held, so that the Acquire(10) below queues...
	if err := sem.Acquire(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	head := make(chan error, 1)
	go func() { head <- sem.Acquire(ctx, 10) }()
	// ...and it does (x/sync spins on TryAcquire; the kernel can tell).
	waitWaiters(t, sem, 1)
	if sem.TryAcquire(1) {
		t.Fatal("TryAcquire(1) overtook the queued Acquire(10)")
	}

	// Acquire(1) queues behind it; cancelling the head lets it in.
	go cancel()
	if err := sem.Acquire(context.Background(), 1); err != nil {
		t.Fatalf("Acquire(1): %v", err)
	}
	if err := <-head; err != context.Canceled {
		t.Errorf("cancelled Acquire(10): %v, want %v", err, context.Canceled)
	}
	sem.Release(2)
	idle(t, sem)
}

// go#63615: ctx done before enough units come back fails the Acquire, and
// the units it was waiting for all come back.  A ctx already done fails an
// Acquire that would not even have to wait.
func TestWeightedAcquireCanceled(t *testing.T) {
	sem := xanon(t, 2)
	ctx, cancel := context.WithCancel(context.Background())
	if err := sem.Acquire(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	go func() {
		// Until the Acquire(2) below is queued (no Fatal here).
		for st, err := sem.Stat(); err == nil && st.Waiters == 0; st, err = sem.Stat() {
			time.Sleep(time.Millisecond)
		}
		cancel()
		sem.Release(1)
		close(released)
	}()
	if err := sem.Acquire(ctx, 2); err != context.Canceled {
		t.Fatalf("Acquire(2) with its ctx cancelled: %v, want %v",
			err, context.Canceled)
	}
	<-released
	if !sem.TryAcquire(2) {
		t.Fatal("TryAcquire(2) after the cancelled Acquire failed")
	}
	sem.Release(2)
	if err := sem.Acquire(ctx, 1); err != context.Canceled {
		t.Fatalf("Acquire(1) with a done ctx: %v, want %v",
			err, context.Canceled)
	}
	idle(t, sem)
}

// x/sync's worker-pool example: acquire before starting each worker, and
// the whole capacity at the end to wait for the last of them.
func TestWorkerPool(t *testing.T) {
	ctx := context.Background()
	const maxWorkers = 3
	sem := xanon(t, maxWorkers)
	out := make([]int, 32)
	var busy, most int32
	for i := range out {
		if err := sem.Acquire(ctx, 1); err != nil {
			t.Fatal(err)
		}
		go func(i int) {
			defer sem.Release(1)
			b := atomic.AddInt32(&busy, 1)
			for m := atomic.LoadInt32(&most); b > m; m = atomic.LoadInt32(&most) {
				if atomic.CompareAndSwapInt32(&most, m, b) {
					break
				}
			}
			out[i] = collatzSteps(i + 1)
			time.Sleep(time.Millisecond)
			atomic.AddInt32(&busy, -1)
		}(i)
	}
	if err := sem.Acquire(ctx, maxWorkers); err != nil {
		t.Fatal(err)
	}
	if most > maxWorkers {
		t.Errorf("%d workers at once, limit %d", most, maxWorkers)
	}
	for i, steps := range out {
		if steps != collatzSteps(i+1) {
			t.Errorf("out[%d] = %d", i, steps)
		}
	}
	sem.Release(maxWorkers)
	idle(t, sem)
}

func collatzSteps(n int) (steps int) {
	for ; n > 1; steps++ {
		if n%2 == 0 {
			n /= 2
		} else {
			n = 3*n + 1
		}
	}
	return steps
}
