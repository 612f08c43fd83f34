// SPDX-License-Identifier: LGPL-2.1-or-later

package wsem

// The pool under pool_test's replay: selftests/pool_replay.c starts this
// test binary as its workers (the helper "replay") beside plain waiters
// of the whole capacity, SIGKILLs them at random moments, and replays the
// log of every step.

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// The kinds of the log's entries that a worker writes (pool_replay.h).
const (
	replayStart = 1
	replayDone  = 2
	replayRel   = 5
)

// replayEntry is pool_replay.h's struct entry: 16 bytes, host byte order.
type replayEntry struct {
	kind   uint32
	who    uint32
	weight uint64
}

// Pooled processes of two goroutines, SIGKILLed and started again at
// random moments beside plain processes that ask for the whole capacity:
// the replay of the log finds never more held than the capacity and no
// Acquire that began after a full request queued granted before it, and
// nothing is held once all are gone (pool_replay says what it checks).
func TestPoolReplayed(t *testing.T) {
	needDevice(t)
	driver, err := exec.LookPath("pool_replay")
	if err != nil {
		t.Skip("no pool_replay (selftests/pool_replay.c) on PATH")
	}
	cmd := exec.Command(driver, os.Args[0])
	cmd.Env = append(os.Environ(), "WSEM_GO_HELPER=replay")
	// Go's workers start at once: 8 s, not pool_replay's 4, for more full
	// requests.  The fast path broken on purpose (no look at the page)
	// overtook 5 of 297 and 0 of 150 in 4 s, 25 of 799 in 8 s.
	if os.Getenv("WSEM_POOL_MS") == "" {
		cmd.Env = append(cmd.Env, "WSEM_POOL_MS=8000")
	}
	out, err := cmd.CombinedOutput()
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		t.Log(l)
	}
	if err != nil {
		t.Fatalf("pool_replay: %v", err)
	}
}

// helperReplay is a worker of pool_replay, which sets WSEM_REPLAY="NAME
// LOGFD GEN THREADS MAXSPARE SEED": THREADS goroutines acquire and release
// 1 or 2 through a pool of MAXSPARE on semaphore NAME, holding it up to
// 200 us (asleep or busy) and asleep up to 200 us after the release,
// until the process is killed, each step one write(2) of an entry to the
// descriptor LOGFD.
func helperReplay() error {
	f := strings.Fields(os.Getenv("WSEM_REPLAY"))
	if len(f) != 6 {
		return fmt.Errorf("WSEM_REPLAY=%q: want 6 fields",
			os.Getenv("WSEM_REPLAY"))
	}
	logFD, gen, threads := int(atoi(f[1])), atoi(f[2]), atoi(f[3])
	seed, err := strconv.ParseUint(f[5], 10, 64)
	if err != nil {
		return err
	}
	w, err := Open(f[0])
	if err != nil {
		return err
	}
	if err := w.EnablePool(atoi(f[4])); err != nil {
		return err
	}
	note := func(kind, who uint32, weight int64) {
		e := replayEntry{kind, who, uint64(weight)}
		b := (*[unsafe.Sizeof(e)]byte)(unsafe.Pointer(&e))[:]
		if n, err := syscall.Write(logFD, b); err != nil || n != len(b) {
			fmt.Fprintln(os.Stderr, "helper: replay: log:", n, err)
			os.Exit(6)
		}
	}
	seeds := rand.New(rand.NewSource(int64(seed)))
	for i := int64(0); i < threads; i++ {
		who := uint32(gen<<8 | i)
		r := rand.New(rand.NewSource(seeds.Int63()))
		go func() {
			for {
				n := 1 + r.Int63n(2)
				note(replayStart, who, n)
				if err := w.Acquire(context.Background(), n); err != nil {
					fmt.Fprintln(os.Stderr, "helper: replay:", err)
					os.Exit(3)
				}
				note(replayDone, who, n)
				d := time.Duration(r.Intn(200)) * time.Microsecond
				if r.Intn(2) == 0 {
					time.Sleep(d)
				} else {
					busy(d)
				}
				note(replayRel, who, n)
				w.Release(n)
				time.Sleep(time.Duration(r.Intn(200)) * time.Microsecond)
			}
		}()
	}
	select {}
}

// busy yields in a loop for d: work between a worker's steps.
func busy(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		runtime.Gosched()
	}
}
