// SPDX-License-Identifier: LGPL-2.1-or-later

package wsem

// What C and Python have, in Go: a watching open, the holders view, the
// label, the idle wait.

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestOpenWatch(t *testing.T) {
	w, name := named(t, 4)
	if err := w.Acquire(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	defer w.Release(3)
	ro, err := OpenWatch(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if st := mustStat(t, ro); st.Used != 3 || st.Capacity != 4 {
		t.Errorf("stat through the watch: used %d of %d", st.Used,
			st.Capacity)
	}
	err = ro.Acquire(context.Background(), 1)
	if !errors.Is(err, syscall.EBADF) {
		t.Errorf("Acquire through a watch: %v, want EBADF", err)
	}
	if ro.TryAcquire(1) {
		t.Error("TryAcquire through a watch succeeded")
	}
	if err := ro.Resize(5); !errors.Is(err, syscall.EBADF) {
		t.Errorf("Resize through a watch: %v, want EBADF", err)
	}
	if err := ro.SetLabel("x"); !errors.Is(err, syscall.EBADF) {
		t.Errorf("SetLabel through a watch: %v, want EBADF", err)
	}
	hs, err := ro.Holders()
	if err != nil || len(hs) != 1 || hs[0].Weight != 3 {
		t.Errorf("holders through a watch: %+v, %v", hs, err)
	}
	if _, err := OpenWatch(name + "-none"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenWatch of a missing name: %v", err)
	}
}

// A watch needs read permission only: another user opens a 0644
// semaphore to watch it, not to acquire.
func TestOpenWatchReadPermission(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to become another user")
	}
	needDevice(t)
	name := uniqueName(t)
	w, err := CreateExclusive(name, 2, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { w.Close(); Unlink(name) }()
	p := startHelperAs(t, 65534, "watch", name)
	p.finish(t)
}

func TestOpenWatchPath(t *testing.T) {
	_, name := named(t, 2)
	dir := mountWsemfs(t)
	ro, err := OpenWatch(dir + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if st := mustStat(t, ro); st.Name != name {
		t.Errorf("stat by path: name %q", st.Name)
	}
	if err := ro.Acquire(context.Background(), 1); !errors.Is(err, syscall.EBADF) {
		t.Errorf("Acquire through a path watch: %v, want EBADF", err)
	}
	fifo := t.TempDir() + "/fifo"
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenWatch(fifo); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("OpenWatch of a FIFO: %v, want EINVAL", err)
	}
}

func TestHoldersAndLabel(t *testing.T) {
	w := anon(t, 4)
	if err := w.SetLabel("build 17"); err != nil {
		t.Fatal(err)
	}
	if err := w.Acquire(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	defer w.Release(2)
	hs, err := w.Holders()
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 1 || hs[0].Weight != 2 || hs[0].Waiting ||
		hs[0].PID != os.Getpid() || hs[0].Label != "build 17" {
		t.Fatalf("holders: %+v", hs)
	}
	// A waiter, on a handle made after SetLabel: labelled too.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Acquire(ctx, 3) }()
	waitWaiters(t, w, 1)
	hs, err = w.Holders()
	if err != nil || len(hs) != 2 || !hs[1].Waiting || hs[1].Weight != 3 ||
		hs[1].Label != "build 17" {
		t.Errorf("holders with a waiter: %+v, %v", hs, err)
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("cancelled Acquire: %v", err)
	}
	for _, bad := range []string{"tab\there", string(make([]byte, 64))} {
		if err := w.SetLabel(bad); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("SetLabel(%q): %v, want EINVAL", bad, err)
		}
	}
	if err := w.SetLabel(""); err != nil {
		t.Fatal(err)
	}
	if hs, _ := w.Holders(); len(hs) != 1 || hs[0].Label != "" {
		t.Errorf("label after clearing: %+v", hs)
	}
}

func TestWaitIdle(t *testing.T) {
	w, name := named(t, 4)
	ctx := context.Background()
	if err := w.WaitIdle(ctx); err != nil {
		t.Fatalf("idle semaphore: %v", err)
	}
	if err := w.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := w.WaitIdle(ctx); !errors.Is(err, syscall.EDEADLK) {
		t.Errorf("WaitIdle while holding: %v, want EDEADLK", err)
	}
	ro, err := OpenWatch(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := ro.WaitIdle(tctx); err != context.DeadlineExceeded {
		t.Errorf("WaitIdle while held: %v, want DeadlineExceeded", err)
	}
	done := make(chan error, 1)
	go func() { done <- ro.WaitIdle(ctx) }()
	select {
	case err := <-done:
		t.Fatalf("WaitIdle returned while held: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	w.Release(1)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("WaitIdle: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("WaitIdle did not return once idle")
	}
}
