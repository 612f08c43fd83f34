// SPDX-License-Identifier: GPL-2.0

package main

import (
	"os"
	"time"

	"wsem.example/wsem"
)

// fakeSem stands in for the host's semaphore (createLoans): it keeps what
// is lent and held, and calls onClose when its handle closes.
type fakeSem struct {
	stat    wsem.Stat
	holders []wsem.Holder
	closed  bool
	onClose func()
}

func newFakeSem(ceiling, lent int64) *fakeSem {
	return &fakeSem{stat: wsem.Stat{Ceiling: ceiling, Lent: lent,
		Capacity: lent, Mode: 0600}}
}

func (f *fakeSem) Lend(n int64) error {
	f.stat.Lent += n - f.stat.LentHere
	f.stat.LentHere, f.stat.Capacity = n, f.stat.Lent
	return nil
}

func (f *fakeSem) LendEndingHolders(n int64) error { return f.Lend(n) }

func (f *fakeSem) LendUntil(n int64, _ bool, _ time.Duration) error {
	return f.Lend(n)
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
