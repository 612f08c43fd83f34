// SPDX-License-Identifier: GPL-2.0

package main

import (
	"context"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// watchOf is a local whose watch handle is f, with its epoll set if f
// can be polled.
func watchOf(t *testing.T, f *os.File) *local {
	t.Helper()
	l := &local{watch: f, events: demandEvents(f)}
	t.Cleanup(func() {
		if l.events != nil {
			l.events.Close()
		}
		f.Close()
	})
	return l
}

// An eventfd never reports POLLRDBAND: waitDemand sleeps until its time,
// and ends at once when its context does, through Go's poller.
func TestWaitDemandSleepsUntilItsTime(t *testing.T) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	l := watchOf(t, os.NewFile(uintptr(efd), "eventfd"))
	if l.events == nil {
		t.Fatal("an eventfd's epoll set is not in Go's poller")
	}
	start := time.Now()
	if l.waitDemand(context.Background(), 300*time.Millisecond) {
		t.Fatal("a demand event from an eventfd")
	}
	if took := time.Since(start); took < 300*time.Millisecond ||
		took > 2*time.Second {
		t.Fatalf("waitDemand(300 ms) took %v", took)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start = time.Now()
	if l.waitDemand(ctx, time.Minute) {
		t.Fatal("a demand event from an eventfd")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("waitDemand took %v to see its context end", took)
	}
	// and the next wait waits again (the deadline is set anew)
	start = time.Now()
	l.waitDemand(context.Background(), 200*time.Millisecond)
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Fatalf("the wait after a canceled one took %v", took)
	}
}

// A handle that epoll cannot watch (/dev/null: a test's fake) is polled.
func TestWaitDemandPollsWhatEpollCannot(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	l := watchOf(t, f)
	if l.events != nil {
		t.Fatal("an epoll set of /dev/null")
	}
	start := time.Now()
	if l.waitDemand(context.Background(), 250*time.Millisecond) {
		t.Fatal("a demand event from /dev/null")
	}
	if took := time.Since(start); took < 250*time.Millisecond {
		t.Fatalf("waitDemand(250 ms) took %v", took)
	}
}
