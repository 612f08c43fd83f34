// SPDX-License-Identifier: LGPL-2.1-or-later

package wsem

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// startLender runs the "lend" helper on a new handle of sem, as uid
// (0: this test's own user).
func startLender(t *testing.T, sem *Weighted, uid uint32, n int64,
	want string) *proc {
	t.Helper()
	f, err := sem.Handle()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "WSEM_GO_HELPER=lend "+
		strconv.FormatInt(n, 10)+" "+want)
	cmd.ExtraFiles = []*os.File{f}
	if uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Credential: &syscall.Credential{Uid: uid, Gid: uid},
		}
	}
	p := startCmd(t, cmd)
	select {
	case <-p.granted:
	case <-p.read:
		t.Fatalf("the lend helper ended: %v", p.cmd.Wait())
	case <-time.After(20 * time.Second):
		t.Fatal("the lend helper said nothing in 20 s")
	}
	return p
}

// result is the end of an Acquire running in a goroutine, or a failure
// after 20 s.
func result(t *testing.T, got chan error) error {
	t.Helper()
	select {
	case err := <-got:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("Acquire still waiting after 20 s")
	}
	return nil
}

// A loan adds to the capacity in force; it is set, not added; Close
// withdraws it as a shrink, revoking nothing held.
func TestLend(t *testing.T) {
	sem, name := named(t, 2)
	lender, err := Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer lender.Close()
	if err := lender.Lend(3); err != nil {
		t.Fatal(err)
	}
	st := mustStat(t, lender)
	if st.Capacity != 5 || st.Lent != 3 || st.LentHere != 3 ||
		st.Ceiling != 0 {
		t.Errorf("capacity %d lent %d here %d ceiling %d; want 5 3 3 0",
			st.Capacity, st.Lent, st.LentHere, st.Ceiling)
	}
	if st := mustStat(t, sem); st.Lent != 3 || st.LentHere != 0 {
		t.Errorf("another Weighted: lent %d here %d; want 3 0",
			st.Lent, st.LentHere)
	}
	if err := lender.Lend(1); err != nil {
		t.Fatal(err)
	}
	if c := mustStat(t, sem).Capacity; c != 3 {
		t.Errorf("capacity %d after Lend(1), want 3", c)
	}
	if !sem.TryAcquire(3) {
		t.Fatal("TryAcquire(3) failed with 2 + 1 lent")
	}
	lender.Close()
	st = mustStat(t, sem)
	if st.Capacity != 2 || st.Lent != 0 || st.Held != 3 || st.Used != 3 {
		t.Errorf("after Close: capacity %d lent %d held %d used %d; "+
			"want 2 0 3 3", st.Capacity, st.Lent, st.Held, st.Used)
	}
	if err := lender.Lend(1); !errors.Is(err, ErrClosed) {
		t.Errorf("Lend on a closed Weighted: %v", err)
	}
	sem.Release(3)
	for _, n := range []int64{-1, wsemCapacityMax} {
		if err := sem.Lend(n); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("Lend(%d): %v, want EINVAL", n, err)
		}
	}
	if c := mustStat(t, sem).Capacity; c != 2 {
		t.Errorf("capacity %d after refused loans, want 2", c)
	}
}

// Another user may not raise a loan; a lender's SIGKILL withdraws its
// loan, and a waiter heavier than what is left fails.
func TestLendOtherUserAndKill(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	sem := anon(t, 2)
	p := startLender(t, sem, 65534, 1, "eperm")
	p.finish(t)
	k := startLender(t, sem, 0, 3, "ok")
	if c := mustStat(t, sem).Capacity; c != 5 {
		t.Fatalf("capacity %d with a loan of 3, want 5", c)
	}
	if !sem.TryAcquire(4) {
		t.Fatal("TryAcquire(4) failed")
	}
	got := make(chan error, 1)
	go func() { got <- sem.Acquire(context.Background(), 5) }()
	waitWaiters(t, sem, 1)
	k.cmd.Process.Kill()
	if err := result(t, got); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Acquire(5) after the loan went: %v, want EINVAL", err)
	}
	st := mustStat(t, sem)
	if st.Capacity != 2 || st.Held != 4 {
		t.Errorf("capacity %d held %d, want 2 4", st.Capacity, st.Held)
	}
	sem.Release(4)
}

// A loans semaphore: own capacity 0, a ceiling; its waiter waits through
// a withdrawal and is granted by a new loan.
func TestLoansSemaphore(t *testing.T) {
	needDevice(t)
	sem, err := NewAnonymousLoans(8)
	if err != nil {
		t.Fatal(err)
	}
	defer sem.Close()
	if st := mustStat(t, sem); st.Capacity != 0 || st.Ceiling != 8 {
		t.Fatalf("capacity %d ceiling %d, want 0 8", st.Capacity,
			st.Ceiling)
	}
	if err := sem.Acquire(context.Background(), 9); !errors.Is(err,
		syscall.EINVAL) {
		t.Errorf("Acquire(9) over the ceiling: %v, want EINVAL", err)
	}
	got := make(chan error, 1)
	go func() { got <- sem.Acquire(context.Background(), 5) }()
	waitWaiters(t, sem, 1)
	p := startLender(t, sem, 0, 3, "ok")
	p.finish(t)
	eventually(t, "the loan is withdrawn", func() bool {
		return mustStat(t, sem).Capacity == 0
	})
	select {
	case err := <-got:
		t.Fatalf("Acquire(5) ended after a withdrawal: %v", err)
	default:
	}
	if err := sem.Resize(0); err != nil {
		t.Errorf("Resize(0) of a loans semaphore: %v", err)
	}
	p = startLender(t, sem, 0, 5, "ok")
	if err := result(t, got); err != nil {
		t.Fatalf("Acquire(5) with 5 lent: %v", err)
	}
	p.finish(t)
	sem.Release(5)
	name := uniqueName(t)
	w, err := CreateLoans(name, 6, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer Unlink(name)
	defer w.Close()
	if st := mustStat(t, w); st.Capacity != 0 || st.Ceiling != 6 {
		t.Errorf("CreateLoans: capacity %d ceiling %d, want 0 6",
			st.Capacity, st.Ceiling)
	}
}

// File is the lending handle itself: its loan goes on while a duplicate
// is open after the Weighted is closed, as a service manager's file
// descriptor store keeps it across a restart; AdoptFD takes the handle
// back, lending what it lent, and its close ends the loan.  A descriptor
// that is no handle is refused, and closed.
func TestFileAndAdoptFD(t *testing.T) {
	needDevice(t)
	w, err := NewAnonymousLoans(4)
	if err != nil {
		t.Fatal(err)
	}
	watch, err := w.Handle()
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	obs, err := OpenFD(int(watch.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	lent := func() int64 {
		t.Helper()
		st, err := obs.Stat()
		if err != nil {
			t.Fatal(err)
		}
		return st.Lent
	}
	if err := w.Lend(3); err != nil {
		t.Fatal(err)
	}
	f, err := w.File()
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if got := lent(); got != 3 {
		t.Fatalf("lent %d with the duplicate open, want 3", got)
	}
	// (AdoptFD owns what it is given: not f's own descriptor)
	fd, err := syscall.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	w2, err := AdoptFD(fd)
	if err != nil {
		t.Fatal(err)
	}
	st, err := w2.Stat()
	if err != nil || st.LentHere != 3 {
		t.Fatalf("adopted: %+v, %v: want LentHere 3", st, err)
	}
	if err := w2.Lend(1); err != nil || lent() != 1 {
		t.Fatalf("lend 1 through the adopted handle: %v, lent %d",
			err, lent())
	}
	w2.Close()
	if got := lent(); got != 0 {
		t.Fatalf("lent %d after the adopted handle closed, want 0", got)
	}
	if fd, err = syscall.Open(os.DevNull, syscall.O_RDONLY, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := AdoptFD(fd); !errors.Is(err, syscall.ENOTTY) {
		t.Fatalf("AdoptFD of /dev/null: %v, want ENOTTY", err)
	}
	_, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd),
		syscall.F_GETFD, 0)
	if e != syscall.EBADF {
		t.Fatalf("/dev/null's descriptor still open after AdoptFD: %v", e)
	}
}
