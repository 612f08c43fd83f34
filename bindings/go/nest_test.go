// SPDX-License-Identifier: LGPL-2.1-or-later

package wsem

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A child's weight is its parent's too; its stat tells the tree.
func TestCreateChild(t *testing.T) {
	root, _ := named(t, 4)
	name := uniqueName(t) + "-kid"
	kid, err := root.CreateChild(name, 3, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kid.Close(); Unlink(name) })
	st := mustStat(t, kid)
	if st.Depth != 1 || st.ParentID == 0 || st.Capacity != 3 {
		t.Fatalf("child stat %+v", st)
	}
	if rs := mustStat(t, root); rs.Depth != 0 || rs.ParentID != 0 {
		t.Fatalf("root stat %+v", rs)
	}
	if err := kid.Acquire(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	if u := mustStat(t, root).Used; u != 3 {
		t.Fatalf("the root's used is %d, want 3", u)
	}
	hs, err := root.Holders()
	if err != nil || len(hs) != 1 || !hs[0].Child || hs[0].Weight != 3 ||
		hs[0].Label != name {
		t.Fatalf("the root's holders %+v (%v)", hs, err)
	}
	kid.Release(3)
	if _, err := root.CreateChildExclusive(name, 3, 0o600); !errors.Is(err,
		os.ErrExist) {
		t.Fatalf("CreateChildExclusive of an existing child: %v", err)
	}
	oname := uniqueName(t) + "-other"
	other, err := CreateExclusive(oname, 2, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close(); Unlink(oname) })
	if _, err := other.CreateChild(name, 1, 0o600); !errors.Is(err,
		os.ErrExist) {
		t.Fatalf("a child under another parent: %v", err)
	}
	anon, err := root.CreateChild("", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	if st := mustStat(t, anon); st.Depth != 1 || st.Name != "" {
		t.Fatalf("anonymous child %+v", st)
	}
	deep := root
	for i := 0; i < depthMax; i++ {
		if deep, err = deep.CreateChild("", 1, 0); err != nil {
			t.Fatalf("level %d: %v", i+1, err)
		}
		defer deep.Close()
	}
	if _, err := deep.CreateChild("", 1, 0); !errors.Is(err,
		syscall.ELOOP) {
		t.Fatalf("below the deepest level: %v", err)
	}
}

// AcquireMany takes all or nothing; a deadline and a cancel end its wait
// holding nothing; it is first on each semaphore once queued.
func TestAcquireMany(t *testing.T) {
	a := anon(t, 2)
	b := anon(t, 1)
	ctx := context.Background()
	if err := AcquireMany(ctx, []*Weighted{a, b}, []int64{2, 1}); err != nil {
		t.Fatal(err)
	}
	if mustStat(t, a).Held != 2 || mustStat(t, b).Held != 1 {
		t.Fatal("the gang's weights are not held")
	}
	a.Release(2)
	// b busy: a deadline ends the wait, a holds nothing meanwhile
	dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err := AcquireMany(dctx, []*Weighted{a, b}, []int64{1, 1})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("with b busy: %v, want DeadlineExceeded", err)
	}
	if mustStat(t, a).Used != 0 || mustStat(t, a).Waiters != 0 {
		t.Fatalf("a after a timed-out gang: %+v", mustStat(t, a))
	}
	// a cancel (no deadline) ends it too
	cctx, ccancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- AcquireMany(cctx, []*Weighted{a, b}, []int64{1, 1})
	}()
	waitWaiters(t, a, 1)
	if a.TryAcquire(1) {
		t.Fatal("a later TryAcquire passed the queued gang")
	}
	ccancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	waitWaiters(t, a, 0)
	// queued, then granted all at once when b is given back
	go func() {
		done <- AcquireMany(ctx, []*Weighted{a, b}, []int64{2, 1})
	}()
	waitWaiters(t, b, 1)
	if mustStat(t, a).Used != 0 {
		t.Fatal("a waiting gang holds part")
	}
	b.Release(1)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if mustStat(t, a).Held != 2 || mustStat(t, b).Held != 1 {
		t.Fatal("the gang's weights are not held after the wait")
	}
	a.Release(2)
	b.Release(1)
	for _, bad := range [][]int64{{0, 1}, {-1, 1}, {1}} {
		if err := AcquireMany(ctx, []*Weighted{a, b}, bad); !errors.Is(err,
			syscall.EINVAL) {
			t.Errorf("weights %v: %v, want EINVAL", bad, err)
		}
	}
	if err := AcquireMany(ctx, []*Weighted{a}, []int64{3}); !errors.Is(err,
		syscall.EINVAL) {
		t.Errorf("above the capacity: %v, want EINVAL", err)
	}
	if mustStat(t, a).Used != 0 {
		t.Fatal("a failed gang holds weight")
	}
}

// gangThread finds the thread waiting in WSEM_IOC_ACQUIRE_MANY (ioctl,
// system call 16 on amd64, its request the second argument).
func gangThread(t *testing.T) int {
	t.Helper()
	want := fmt.Sprintf("0x%x", iocAcquireMany)
	tid := 0
	eventually(t, "the gang's thread waits in its ioctl", func() bool {
		dirs, _ := os.ReadDir("/proc/self/task")
		for _, d := range dirs {
			b, err := os.ReadFile("/proc/self/task/" + d.Name() +
				"/syscall")
			f := strings.Fields(string(b))
			if err != nil || len(f) < 3 || f[0] != "16" ||
				f[2] != want {
				continue
			}
			tid, _ = strconv.Atoi(d.Name())
			return true
		}
		return false
	})
	return tid
}

// Signals that reach AcquireMany's thread while it waits (here SIGWINCH,
// for which the Go runtime has a handler) do not send the gang to the end
// of its queues: a request queued after it is still after it.
func TestAcquireManyKeepsItsPlaceThroughSignals(t *testing.T) {
	a := anon(t, 2)
	b := anon(t, 2)
	ctx := context.Background()
	if err := a.Acquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	gang := make(chan error, 1)
	go func() {
		gang <- AcquireMany(ctx, []*Weighted{a, b}, []int64{1, 1})
	}()
	waitWaiters(t, a, 1)
	tid := gangThread(t)
	late := make(chan error, 1)
	go func() { late <- a.Acquire(ctx, 1) }()
	waitWaiters(t, a, 2)
	for i := 0; i < 5; i++ {
		if err := syscall.Tgkill(os.Getpid(), tid,
			syscall.SIGWINCH); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	a.Release(1)
	select {
	case err := <-gang:
		if err != nil {
			t.Fatal(err)
		}
	case err := <-late:
		// Its unit back lets the gang end before the test does.
		a.Release(1)
		<-gang
		t.Fatalf("the request behind the gang came first (%v)", err)
	case <-time.After(5 * time.Second):
		t.Fatal("nobody was granted")
	}
	if st := mustStat(t, a); st.Waiters != 1 {
		t.Fatalf("a after the gang's grant: %+v", st)
	}
	a.Release(1)
	if err := <-late; err != nil {
		t.Fatal(err)
	}
	a.Release(1)
	b.Release(1)
}
