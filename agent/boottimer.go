// SPDX-License-Identifier: GPL-2.0

package main

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// bootTimer is a timer on CLOCK_BOOTTIME, the clock of the lease's local
// end and of the kernel's deadline on the loan.  Go's own timers run on
// CLOCK_MONOTONIC, which stops while the machine is suspended: one set
// for an instant that passes during a suspend fires that much after the
// resume.  A timerfd on CLOCK_BOOTTIME armed at an absolute instant fires
// at the resume (timerfd_create(2)).  The timerfd is non-blocking, so
// os.NewFile puts it in Go's poller, and a goroutine that reads its
// expirations costs no thread while it waits; each expiration is a token
// on C (one for any number not taken).  A token may outlive the instant
// it was armed for (set again meanwhile): whoever takes it reads the
// clock again.
type bootTimer struct {
	f *os.File
	C chan struct{}
}

// newBootTimer is a timer not armed.
func newBootTimer() (*bootTimer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_BOOTTIME,
		unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("timerfd_create", err)
	}
	t := &bootTimer{
		f: os.NewFile(uintptr(fd), "wsem-lease-end"),
		C: make(chan struct{}, 1),
	}
	go t.read()
	return t, nil
}

// read passes each expiration on to C until the timer is closed.
func (t *bootTimer) read() {
	var n [8]byte // the count of expirations
	for {
		if _, err := t.f.Read(n[:]); err != nil {
			if !errors.Is(err, os.ErrClosed) {
				lg.Printf("the lease's timer: %v", err)
			}
			return
		}
		select {
		case t.C <- struct{}{}:
		default: // a token waits already
		}
	}
}

// set arms the timer for the CLOCK_BOOTTIME instant at (one already
// passed fires at once), or disarms it when at is 0.
func (t *bootTimer) set(at time.Duration) error {
	if at < 0 {
		at = 1 // 0 would disarm it
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(at))}
	rc, err := t.f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		serr = unix.TimerfdSettime(int(fd), unix.TFD_TIMER_ABSTIME,
			&spec, nil)
	})
	if err == nil {
		err = os.NewSyscallError("timerfd_settime", serr)
	}
	return err
}

// close ends the timer and its goroutine.
func (t *bootTimer) close() {
	t.f.Close()
}
