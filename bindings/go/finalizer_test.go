// SPDX-License-Identifier: LGPL-2.1-or-later

package wsem

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// nsLimit is the module's max_sems_per_ns: how many semaphores one IPC
// namespace may hold.
func nsLimit(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/sys/module/wsem/parameters/max_sems_per_ns")
	if err != nil {
		t.Skipf("no max_sems_per_ns: %v", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 {
		t.Fatalf("max_sems_per_ns %q", b)
	}
	return n
}

// A Weighted nobody closes is closed by the garbage collector, as an
// os.File is: a loop that creates, unlinks and forgets more semaphores
// than the namespace may hold never meets ENOSPC, and what the lost
// Weighteds held is given back.
func TestUnclosedWeightedIsCollected(t *testing.T) {
	needDevice(t)
	limit := nsLimit(t)
	base := uniqueName(t)
	for i := 0; i < limit+64; i++ {
		name := base + "-" + strconv.Itoa(i)
		w, err := NewWeighted(name, 2)
		if err != nil {
			t.Fatalf("NewWeighted #%d of a limit of %d: %v", i, limit, err)
		}
		if !w.TryAcquire(1) {
			t.Fatalf("TryAcquire #%d failed", i)
		}
		if err := Unlink(name); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
	}
	for i := 0; i < limit+64; i++ {
		w, err := NewAnonymous(1)
		if err != nil {
			t.Fatalf("NewAnonymous #%d of a limit of %d: %v", i, limit, err)
		}
		w.TryAcquire(1)
		runtime.GC()
	}
}

// The same loop as a program that forgets Close writes it, without calling
// the collector: a Weighted hardly grows the Go heap, so no collection
// comes by itself before the namespace is full; the constructor that meets
// ENOSPC runs one, and the finalizers make room.
func TestUnclosedWeightedWithoutGC(t *testing.T) {
	needDevice(t)
	limit := nsLimit(t)
	base := uniqueName(t)
	for i := 0; i < limit+64; i++ {
		name := base + "-" + strconv.Itoa(i)
		w, err := NewWeighted(name, 2)
		if err != nil {
			t.Fatalf("NewWeighted #%d of a limit of %d: %v", i, limit, err)
		}
		w.TryAcquire(1)
		if err := Unlink(name); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
}

// Close and then the collector: the finalizer does nothing more.
func TestClosedWeightedHasNoFinalizer(t *testing.T) {
	w := anon(t, 1)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != ErrClosed {
		t.Fatalf("second Close: %v", err)
	}
	runtime.GC()
}
