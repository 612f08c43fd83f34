// SPDX-License-Identifier: GPL-2.0

package main

import (
	"testing"
	"time"
)

// tokenWithin: a token of t comes within d.
func tokenWithin(t *bootTimer, d time.Duration) bool {
	select {
	case <-t.C:
		return true
	case <-time.After(d):
		return false
	}
}

// The timer fires at its CLOCK_BOOTTIME instant, not before; an instant
// already passed fires at once.
func TestBootTimerFiresAtItsInstant(t *testing.T) {
	bt, err := newBootTimer()
	if err != nil {
		t.Fatal(err)
	}
	defer bt.close()
	at := bootTime() + 200*time.Millisecond
	if err := bt.set(at); err != nil {
		t.Fatal(err)
	}
	if !tokenWithin(bt, 5*time.Second) {
		t.Fatal("armed for 200 ms from now: no expiration within 5 s")
	}
	if now := bootTime(); now < at {
		t.Errorf("fired %v before its instant", at-now)
	}
	if err := bt.set(bootTime() - time.Second); err != nil {
		t.Fatal(err)
	}
	if !tokenWithin(bt, time.Second) {
		t.Error("armed for an instant passed: no expiration within 1 s")
	}
}

// Set again, the timer fires at the new instant only; set to 0, never.
func TestBootTimerSetAgain(t *testing.T) {
	bt, err := newBootTimer()
	if err != nil {
		t.Fatal(err)
	}
	defer bt.close()
	if err := bt.set(bootTime() + 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	at := bootTime() + 600*time.Millisecond
	if err := bt.set(at); err != nil {
		t.Fatal(err)
	}
	if tokenWithin(bt, 400*time.Millisecond) {
		t.Error("moved on to 600 ms: fired at the first instant")
	}
	if !tokenWithin(bt, 5*time.Second) || bootTime() < at {
		t.Error("moved on to 600 ms: not fired at it")
	}
	if err := bt.set(bootTime() + 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := bt.set(0); err != nil {
		t.Fatal(err)
	}
	if tokenWithin(bt, 400*time.Millisecond) {
		t.Error("disarmed: fired")
	}
}
