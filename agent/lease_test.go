// SPDX-License-Identifier: GPL-2.0

package main

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"wsem.example/wsem"
)

// sleeper is a process that lives until killed (or a minute).
func sleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}

// killedBy is how c ended, once it has (or a failure after 10 s).
func killedBy(t *testing.T, c *exec.Cmd) syscall.Signal {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("pid %d still running", c.Process.Pid)
	}
	ws := c.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() {
		return 0
	}
	return ws.Signal()
}

// A holder is killed through a pidfd taken before the holders are read
// again: a pid that holds nothing by then (a holder that died, its pid
// taken by another process) is not signalled.
func TestKillHolderChecksAgain(t *testing.T) {
	sem := newFakeSem(2, 0)
	a := &agent{loc: &local{w: sem}}

	holder := sleeper(t)
	sem.holders = []wsem.Holder{{PID: holder.Process.Pid, Weight: 1}}
	if err := a.killHolder(holder.Process.Pid); err != nil {
		t.Fatalf("killHolder of a holder: %v", err)
	}
	if sig := killedBy(t, holder); sig != syscall.SIGKILL {
		t.Fatalf("the holder ended by %v, want SIGKILL", sig)
	}

	other := sleeper(t)
	defer other.Process.Kill()
	sem.holders = nil
	err := a.killHolder(other.Process.Pid)
	if !errors.Is(err, errNotHolder) {
		t.Fatalf("killHolder of a pid that holds nothing: %v", err)
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("a pid that holds nothing was signalled: %v", err)
	}
	sem.holders = []wsem.Holder{{PID: other.Process.Pid, Waiting: true}}
	if err := a.killHolder(other.Process.Pid); !errors.Is(err, errNotHolder) {
		t.Fatalf("killHolder of a waiter: %v", err)
	}
}
