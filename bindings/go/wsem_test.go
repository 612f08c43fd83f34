// SPDX-License-Identifier: LGPL-2.1-or-later

package wsem

// What x/sync's tests cannot ask: one FIFO queue shared with waiters of
// other kinds and other processes, the example program limiting work across
// processes, cancellation racing grants, Close, shrinking, the handle pool,
// the constructors.

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A queued waiter of TestFIFOMixed, of any kind.
type fifoWaiter struct {
	kind    string
	weight  int64
	proc    *proc         // the kinds in another process
	granted chan struct{} // "go": closed once granted
	release chan struct{} // "go": closed to let go
	done    chan error    // "go": Acquire's error, after letting go
}

func (f *fifoWaiter) isGranted() bool {
	if f.proc != nil {
		return f.proc.isGranted()
	}
	select {
	case <-f.granted:
		return true
	default:
		return false
	}
}

func (f *fifoWaiter) letGo(t *testing.T) {
	if f.proc != nil {
		f.proc.finish(t)
		return
	}
	close(f.release)
	if err := <-f.done; err != nil {
		t.Fatal(err)
	}
}

// One queue, four kinds of waiters: the wsem command's blocking C acquire,
// a raw asynchronous request polled by another process, Weighted.Acquire
// in another process, and Weighted.Acquire in goroutines of this one.  No
// one overtakes: after every release exactly the longest prefix of the
// queue that fits is granted, and nobody behind it.
func TestFIFOMixed(t *testing.T) {
	sem, name := named(t, 4)
	cli, err := exec.LookPath("wsem")
	if err != nil {
		t.Skip("no wsem command on PATH")
	}
	gw, err := Open(name) // the goroutines' Weighted, shared
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	if !sem.TryAcquire(3) {
		t.Fatal("TryAcquire(3) failed")
	}
	// Weights chosen so that light waiters sit behind heavy ones that do
	// not fit, with every kind in front of and behind every other.
	queue := []*fifoWaiter{
		{kind: "go", weight: 2}, {kind: "c", weight: 1},
		{kind: "async", weight: 1}, {kind: "goproc", weight: 1},
		{kind: "c", weight: 3}, {kind: "async", weight: 4},
		{kind: "go", weight: 3}, {kind: "goproc", weight: 2},
		{kind: "c", weight: 2}, {kind: "async", weight: 1},
		{kind: "go", weight: 1}, {kind: "goproc", weight: 4},
		{kind: "c", weight: 4}, {kind: "async", weight: 3},
		{kind: "go", weight: 4},
	}
	for i, f := range queue {
		w := strconv.FormatInt(f.weight, 10)
		switch f.kind {
		case "c":
			f.proc = startProc(t, nil, cli, "run", name, "--weight", w,
				"--", "sh", "-c", "echo granted; exec cat >/dev/null")
		case "async":
			f.proc = startHelper(t, "async", name, w)
		case "goproc":
			f.proc = startHelper(t, "go", name, w)
		case "go":
			f.granted = make(chan struct{})
			f.release = make(chan struct{})
			f.done = make(chan error, 1)
			go func(f *fifoWaiter) {
				err := gw.Acquire(context.Background(), f.weight)
				if err == nil {
					close(f.granted)
					<-f.release
					gw.Release(f.weight)
				}
				f.done <- err
			}(f)
		}
		waitWaiters(t, sem, int64(i+1))
	}

	held := int64(3) // by sem, until the first step
	var holders []*fifoWaiter
	next := 0
	rng := rand.New(rand.NewSource(1))
	for step := 0; next < len(queue) || len(holders) > 0; step++ {
		// Which waiters must hold now, in a strict FIFO?
		for next < len(queue) && held+queue[next].weight <= 4 {
			held += queue[next].weight
			holders = append(holders, queue[next])
			next++
		}
		for _, f := range holders {
			eventually(t, fmt.Sprintf("step %d: %s waiter of %d is granted",
				step, f.kind, f.weight), f.isGranted)
		}
		time.Sleep(200 * time.Millisecond)
		st := mustStat(t, sem)
		if st.Used != held || st.Waiters != int64(len(queue)-next) {
			t.Fatalf("step %d: used %d, %d waiters; want %d, %d", step,
				st.Used, st.Waiters, held, len(queue)-next)
		}
		for i := next; i < len(queue); i++ {
			if queue[i].isGranted() {
				t.Fatalf("step %d: waiter %d (%s, %d) overtook waiter %d",
					step, i, queue[i].kind, queue[i].weight, next)
			}
		}
		// Let go: sem's 3 units first, then a holder chosen at random.
		if step == 0 {
			sem.Release(3)
			held -= 3
			continue
		}
		i := rng.Intn(len(holders))
		holders[i].letGo(t)
		held -= holders[i].weight
		holders = append(holders[:i], holders[i+1:]...)
	}
	idle(t, sem)
}

// The example program, three copies of it at once: the limit of 4 holds
// over all of them, and is reached.
func TestPoolAcrossProcesses(t *testing.T) {
	sem, name := named(t, 4)
	pool := os.Getenv("WSEM_GO_POOL")
	if pool == "" {
		var err error
		if pool, err = exec.LookPath("wsem-go-pool"); err != nil {
			t.Skip("no wsem-go-pool (WSEM_GO_POOL or PATH)")
		}
	}
	dir := t.TempDir()
	var cmds []*exec.Cmd
	for i := 0; i < 3; i++ {
		c := exec.Command(pool, "-name", name, "-limit", "4", "-jobs", "6",
			"--", os.Args[0])
		c.Env = append(os.Environ(), "WSEM_GO_HELPER=job "+dir+" 4")
		c.Stdout, c.Stderr = os.Stderr, os.Stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Errorf("pool: %v", err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "count"))
	if err != nil {
		t.Fatal(err)
	}
	var now, most int
	fmt.Sscan(string(b), &now, &most)
	if now != 0 || most != 4 {
		t.Errorf("jobs running at the end %d, at most %d; want 0, 4",
			now, most)
	}
	st := mustStat(t, sem)
	if st.GrantsWaited == 0 {
		t.Errorf("no pool ever waited: %+v", st)
	}
	idle(t, sem)
}

// go#37852 across processes: the head of the queue, a Weighted of another
// process, gives up, and the waiter behind it, here, gets in.
func TestCancelledHeadOfOtherProcess(t *testing.T) {
	sem, name := named(t, 10)
	if !sem.TryAcquire(1) {
		t.Fatal("TryAcquire(1) failed")
	}
	head := startHelper(t, "go-cancel", name, "10")
	waitWaiters(t, sem, 1)
	got := make(chan error, 1)
	go func() { got <- sem.Acquire(context.Background(), 1) }()
	waitWaiters(t, sem, 2)
	select {
	case err := <-got:
		t.Fatalf("Acquire(1) overtook the head: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	head.finish(t) // it cancels, and checks that it holds nothing
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if line := <-head.lines; line != "acquire: context canceled" {
		t.Errorf("the head said %q", line)
	}
	sem.Release(2)
	idle(t, sem)
}

// An anonymous semaphore reaches a child through Handle and OpenFD; the
// child's weight counts against ours.
func TestAnonymousInChild(t *testing.T) {
	sem := anon(t, 3)
	f, err := sem.Handle()
	if err != nil {
		t.Fatal(err)
	}
	var p *proc
	func() {
		defer f.Close()
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "WSEM_GO_HELPER=fd 2")
		cmd.ExtraFiles = []*os.File{f}
		p = startCmd(t, cmd)
	}()
	<-p.granted
	if sem.TryAcquire(2) {
		t.Fatal("TryAcquire(2) succeeded with 2 of 3 held by the child")
	}
	if !sem.TryAcquire(1) {
		t.Fatal("TryAcquire(1) failed")
	}
	p.finish(t)
	eventually(t, "the child's weight comes back", func() bool {
		return mustStat(t, sem).Used == 1
	})
	sem.Release(1)
	idle(t, sem)
}

// Cancellations racing grants, many times over: whatever wins, a failed
// Acquire holds nothing and a successful one exactly n, so that at the
// end nothing is held and nobody waits.
func TestCancelRaceHoldsNothing(t *testing.T) {
	sem := anon(t, 2)
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	var wg sync.WaitGroup
	var ok, failed int64
	var mu sync.Mutex
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			for i := 0; i < rounds; i++ {
				n := 1 + rng.Int63n(2)
				d := time.Duration(rng.Int63n(int64(2 * time.Millisecond)))
				ctx, cancel := context.WithTimeout(context.Background(), d)
				err := sem.Acquire(ctx, n)
				cancel()
				mu.Lock()
				if err == nil {
					ok++
				} else {
					failed++
				}
				mu.Unlock()
				if err == nil {
					time.Sleep(time.Duration(rng.Int63n(int64(time.Millisecond))))
					sem.Release(n)
				} else if err != context.DeadlineExceeded {
					t.Error(err)
				}
			}
		}(int64(g))
	}
	wg.Wait()
	t.Logf("%d granted, %d timed out", ok, failed)
	if ok == 0 || failed == 0 {
		t.Errorf("no race: %d granted, %d timed out", ok, failed)
	}
	idle(t, sem)
}

// Close ends a waiting Acquire with ErrClosed and leaves the queue; what a
// closed Weighted held comes back.
func TestCloseEndsWaiters(t *testing.T) {
	sem, name := named(t, 2)
	other, err := Open(name)
	if err != nil {
		t.Fatal(err)
	}
	if !other.TryAcquire(1) || !sem.TryAcquire(1) {
		t.Fatal("TryAcquire(1) failed")
	}
	got := make(chan error, 1)
	go func() { got <- other.Acquire(context.Background(), 2) }()
	waitWaiters(t, sem, 1)
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != ErrClosed {
			t.Errorf("Acquire on a closed Weighted: %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the waiting Acquire")
	}
	if st := mustStat(t, sem); st.Used != 1 || st.Waiters != 0 {
		t.Errorf("after Close: used %d, %d waiters; want 1, 0",
			st.Used, st.Waiters)
	}
	if other.TryAcquire(1) {
		t.Error("TryAcquire on a closed Weighted succeeded")
	}
	if err := other.Acquire(context.Background(), 1); err != ErrClosed {
		t.Errorf("Acquire after Close: %v", err)
	}
	other.Release(1) // nothing: Close gave it back
	if err := other.Close(); err != ErrClosed {
		t.Errorf("second Close: %v", err)
	}
	sem.Release(1)
	idle(t, sem)
}

// A capacity shrunk below a waiter's weight ends its Acquire with EINVAL.
func TestShrinkEndsWaiter(t *testing.T) {
	sem := anon(t, 4)
	if !sem.TryAcquire(2) {
		t.Fatal("TryAcquire(2) failed")
	}
	got := make(chan error, 1)
	go func() { got <- sem.Acquire(context.Background(), 3) }()
	waitWaiters(t, sem, 1)
	if err := sem.Resize(2); err != nil {
		t.Fatal(err)
	}
	if err := <-got; !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Acquire(3) after a shrink to 2: %v, want EINVAL", err)
	}
	st := mustStat(t, sem)
	if st.Shrunk != 1 || st.Held != 2 {
		t.Errorf("shrunk %d, held %d; want 1, 2", st.Shrunk, st.Held)
	}
	sem.Release(2)
	idle(t, sem)
}

// Weight granted to several waiters sits on several handles; one Release
// gives it all back, from whichever goroutine.
func TestReleaseSpansHandles(t *testing.T) {
	sem := anon(t, 10)
	if !sem.TryAcquire(8) {
		t.Fatal("TryAcquire(8) failed")
	}
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sem.Acquire(context.Background(), 3); err != nil {
				t.Error(err)
			}
		}()
		waitWaiters(t, sem, int64(i+1))
	}
	sem.Release(8) // the three fit, each on a handle of its own
	wg.Wait()
	if !sem.TryAcquire(1) {
		t.Fatal("TryAcquire(1) failed")
	}
	if st := mustStat(t, sem); st.Used != 10 || st.Held != 10 {
		t.Fatalf("used %d, held %d; want 10, 10", st.Used, st.Held)
	}
	if sem.TryAcquire(1) {
		t.Fatal("TryAcquire(1) succeeded on a full semaphore")
	}
	sem.Release(10)
	idle(t, sem)
}

// Waiting takes no thread: 200 waiting goroutines, a handful of threads;
// and once they are done, the spare handles are few again.
func TestWaitersNeedNoThreads(t *testing.T) {
	sem := anon(t, 1)
	if !sem.TryAcquire(1) {
		t.Fatal("TryAcquire(1) failed")
	}
	const n = 200
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sem.Acquire(context.Background(), 1); err != nil {
				t.Error(err)
				return
			}
			sem.Release(1)
		}()
	}
	waitWaiters(t, sem, n)
	if th := threads(t); th > 40 {
		t.Errorf("%d threads for %d waiters", th, n)
	}
	if fds := wsemFDs(t); fds < n {
		t.Errorf("%d handles for %d waiters", fds, n)
	}
	sem.Release(1)
	wg.Wait()
	idle(t, sem)
	if fds := wsemFDs(t); fds > maxSpare+1 {
		t.Errorf("%d handles left open, at most %d spare", fds, maxSpare)
	}
}

func threads(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Threads:") {
			n, _ := strconv.Atoi(strings.TrimSpace(l[8:]))
			return n
		}
	}
	t.Fatal("no Threads: in /proc/self/status")
	return 0
}

// wsemFDs counts this process's wsem handles (by their fdinfo).
func wsemFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fdinfo")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		b, _ := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if strings.Contains(string(b), "\nwsem-held:") {
			n++
		}
	}
	return n
}

func TestOpenErrors(t *testing.T) {
	sem, name := named(t, 3)
	if _, err := Open(name + "-none"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open of a missing name: %v", err)
	}
	if _, err := CreateExclusive(name, 3, 0o600); !errors.Is(err, os.ErrExist) {
		t.Errorf("CreateExclusive of an existing name: %v", err)
	}
	w, err := NewWeighted(name, 9) // exists: keeps its capacity
	if err != nil {
		t.Fatal(err)
	}
	if st := mustStat(t, w); st.Capacity != 3 || st.Name != name {
		t.Errorf("NewWeighted of an existing one: %+v", st)
	}
	w.Close()
	for _, bad := range []struct {
		name string
		n    int64
	}{
		{name + "-z", 0}, {name + "-big", 1<<62 + 1}, {name + "-neg", -1},
		{"", 1}, {"a b", 1}, {strings.Repeat("x", 64), 1}, {"a/b", 1},
	} {
		if _, err := Create(bad.name, bad.n, 0o600); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("Create(%q, %d): %v, want EINVAL", bad.name, bad.n, err)
		}
	}
	if _, err := NewAnonymous(0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("NewAnonymous(0): %v", err)
	}
	if _, err := Open(t.TempDir() + "/x"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open of a missing path: %v", err)
	}
	f := filepath.Join(t.TempDir(), "plain")
	os.WriteFile(f, nil, 0o600)
	if _, err := Open(f); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Open of a file outside wsemfs: %v", err)
	}
	if _, err := OpenFD(0); err == nil {
		t.Error("OpenFD of stdin succeeded")
	}
	if err := sem.Acquire(context.Background(), -1); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Acquire(-1): %v", err)
	}
	if err := sem.Acquire(context.Background(), 4); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Acquire(4) of capacity 3: %v", err)
	}
	if sem.TryAcquire(-1) || sem.TryAcquire(4) || !sem.TryAcquire(0) {
		t.Error("TryAcquire of -1, 4 or 0 of capacity 3 is wrong")
	}
	if err := Unlink(name); err != nil {
		t.Fatal(err)
	}
	if err := Unlink(name); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("second Unlink: %v", err)
	}
	// Unlinked, it works on, nameless.
	if !sem.TryAcquire(3) || mustStat(t, sem).Name != "" {
		t.Error("an unlinked semaphore does not work on")
	}
	sem.Release(3)
}

// A wsemfs file opens the same semaphore as its name.
func TestOpenPath(t *testing.T) {
	sem, name := named(t, 2)
	dir := t.TempDir()
	if err := syscall.Mount("wsem", dir, "wsem", 0, ""); err != nil {
		t.Skipf("cannot mount wsemfs: %v", err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	w, err := Open(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if !w.TryAcquire(2) {
		t.Fatal("TryAcquire(2) through the path failed")
	}
	if sem.TryAcquire(1) || mustStat(t, sem).Used != 2 {
		t.Error("the path's weight does not count on the name")
	}
	got := make(chan error, 1)
	go func() { got <- sem.Acquire(context.Background(), 1) }()
	waitWaiters(t, sem, 1)
	w.Release(1)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	w.Release(1)
	sem.Release(1)
	idle(t, sem)
}
