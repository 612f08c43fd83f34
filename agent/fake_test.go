// SPDX-License-Identifier: GPL-2.0

package main

import (
	"fmt"
	"os"
	"time"

	"wsem.example/wsem"
)

// fakeSem stands in for the host's semaphore (createLoans): it keeps what
// is lent and held, and calls onClose when its handle closes.
type fakeSem struct {
	stat    wsem.Stat
	holders []wsem.Holder
	lends   []fakeLend // every lend asked of the handle, in order
	closed  bool
	onClose func()
	onLend  func() // called as a lend is asked, before it is made
}

// fakeLend is one lend asked of a fakeSem: n, until deadline
// (CLOCK_BOOTTIME; 0: none).
type fakeLend struct {
	n        int64
	deadline time.Duration
}

func (l fakeLend) String() string {
	return fmt.Sprintf("%d until %v", l.n, l.deadline)
}

func newFakeSem(ceiling, lent int64) *fakeSem {
	return &fakeSem{stat: wsem.Stat{Ceiling: ceiling, Lent: lent,
		Capacity: lent, Mode: 0600}}
}

func (f *fakeSem) lend(n int64, deadline time.Duration) error {
	if f.onLend != nil {
		f.onLend()
	}
	f.lends = append(f.lends, fakeLend{n, deadline})
	f.stat.Lent += n - f.stat.LentHere
	f.stat.LentHere, f.stat.Capacity = n, f.stat.Lent
	return nil
}

// waiter queues a waiter of weight on f.
func (f *fakeSem) waiter(weight int64) {
	f.stat.QueuedWeight += weight
	f.stat.Waiters++
	f.holders = append(f.holders, wsem.Holder{Weight: weight, Waiting: true})
}

func (f *fakeSem) Lend(n int64) error { return f.lend(n, 0) }

func (f *fakeSem) LendEndingHolders(n int64) error { return f.lend(n, 0) }

func (f *fakeSem) LendUntil(n int64, _ bool, deadline time.Duration) error {
	return f.lend(n, deadline)
}

func (f *fakeSem) Stat() (*wsem.Stat, error) {
	st := f.stat
	return &st, nil
}

func (f *fakeSem) Holders() ([]wsem.Holder, error) { return f.holders, nil }

func (f *fakeSem) Handle() (*os.File, error) { return os.Open(os.DevNull) }

func (f *fakeSem) File() (*os.File, error) { return os.Open(os.DevNull) }

func (f *fakeSem) Close() error {
	if f.onClose != nil {
		f.onClose()
	}
	f.closed = true
	return nil
}

// useFakeSem has the agent open sem as its host's semaphore, and keep its
// lock files in dir, until the function it returns.
func useFakeSem(sem *fakeSem, dir string) func() {
	open, run := createLoans, runDir
	createLoans = func(string, int64, os.FileMode) (kernelSem, error) {
		return sem, nil
	}
	runDir = dir
	return func() { createLoans, runDir = open, run }
}
