// SPDX-License-Identifier: LGPL-2.1-or-later

package wsem

// What the tests share: the helper processes (this test binary, started
// again with WSEM_GO_HELPER set), semaphores that clean up after
// themselves, and polling for a state.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

func TestMain(m *testing.M) {
	if h := os.Getenv("WSEM_GO_HELPER"); h != "" {
		os.Exit(helper(strings.Fields(h)))
	}
	os.Exit(m.Run())
}

// needDevice skips a test where /dev/wsem is missing (a host without the
// module); in the VM it is always there.
func needDevice(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(devicePath); err != nil {
		t.Skipf("no %s: the wsem module is not loaded", devicePath)
	}
}

// uniqueName is a semaphore name no other test of any run uses.
func uniqueName(t testing.TB) string {
	n := strings.NewReplacer("/", ".", "#", "-").Replace(t.Name())
	if len(n) > 40 {
		n = n[len(n)-40:]
	}
	return fmt.Sprintf("gt%d-%s", os.Getpid(), n)
}

// anon is an anonymous semaphore of capacity n, closed after the test.
func anon(t testing.TB, n int64) *Weighted {
	t.Helper()
	needDevice(t)
	w, err := NewAnonymous(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// named is a new named semaphore of capacity n, closed and unlinked after
// the test.
func named(t testing.TB, n int64) (*Weighted, string) {
	t.Helper()
	needDevice(t)
	name := uniqueName(t)
	w, err := CreateExclusive(name, n, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.Close()
		Unlink(name)
	})
	return w, name
}

func mustStat(t testing.TB, w *Weighted) *Stat {
	t.Helper()
	st, err := w.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// eventually polls cond every 10 ms for up to 20 s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitWaiters waits until k waiters are queued on w's semaphore.
func waitWaiters(t testing.TB, w *Weighted, k int64) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d waiters are queued", k), func() bool {
		return mustStat(t, w).Waiters == k
	})
}

// A proc is a waiter in another process: it prints "granted" once it holds
// its weight and holds it until its stdin is closed.
type proc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	granted chan struct{} // closed at "granted"
	lines   chan string   // everything else it printed
	read    chan struct{} // closed once its stdout is read to the end
}

// startProc starts argv (with env added), which must speak as a proc does.
func startProc(t testing.TB, env []string, argv ...string) *proc {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	return startCmd(t, cmd)
}

// startCmd starts a prepared command that speaks as a proc does.
func startCmd(t testing.TB, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{cmd: cmd, granted: make(chan struct{}),
		lines: make(chan string, 16), read: make(chan struct{})}
	p.cmd.Stderr = os.Stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "granted" {
				close(p.granted)
			} else {
				p.lines <- sc.Text()
			}
		}
		close(p.lines)
		close(p.read)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	})
	return p
}

func startHelper(t testing.TB, kind string, args ...string) *proc {
	t.Helper()
	return startProc(t, []string{"WSEM_GO_HELPER=" + kind + " " +
		strings.Join(args, " ")}, os.Args[0])
}

// startHelperAs is startHelper as user uid (and group uid).
func startHelperAs(t testing.TB, uid uint32, kind string,
	args ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "WSEM_GO_HELPER="+kind+" "+
		strings.Join(args, " "))
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uid, Gid: uid},
	}
	return startCmd(t, cmd)
}

// mountWsemfs is a wsemfs mount in a temporary directory for the test,
// or a skip where it cannot be mounted.
func mountWsemfs(t testing.TB) string {
	t.Helper()
	needDevice(t)
	dir := t.TempDir()
	if err := syscall.Mount("wsem", dir, "wsem", 0, ""); err != nil {
		t.Skipf("cannot mount wsemfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

func (p *proc) isGranted() bool {
	select {
	case <-p.granted:
		return true
	default:
		return false
	}
}

// finish closes p's stdin, so that it lets go, and waits for it to exit 0.
// Its stdout is read to the end first: Wait closes the pipe, and a line
// not read by then would be lost.
func (p *proc) finish(t testing.TB) {
	t.Helper()
	p.stdin.Close()
	<-p.read
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("%v: %v", p.cmd.Args, err)
	}
}

// helper runs in a helper process; its exit status is the test's verdict.
func helper(args []string) int {
	var err error
	switch args[0] {
	case "go": // NAME W: Acquire through a Weighted
		err = helperGo(args[1], atoi(args[2]))
	case "go-cancel": // NAME W: Acquire, cancelled when stdin closes
		err = helperGoCancel(args[1], atoi(args[2]))
	case "async": // NAME W: the raw asynchronous request, poll(2)
		err = helperAsync(args[1], atoi(args[2]))
	case "fd": // W: OpenFD(3), TryAcquire(W), hold until stdin closes
		err = helperFD(atoi(args[1]))
	case "job": // DIR N: one job of the pool example, counted
		err = helperJob(args[1], atoi(args[2]))
	case "watch": // NAME: no read-write open, a watch that stats
		err = helperWatch(args[1])
	case "lend": // W WANT: OpenFD(3), Lend(W); WANT ok or eperm
		err = helperLend(atoi(args[1]), args[2])
	case "pool": // NAME G MAXSPARE: G goroutines through a pool
		err = helperPool(args[1], atoi(args[2]), atoi(args[3]))
	case "replay": // a worker of pool_replay: WSEM_REPLAY says what
		err = helperReplay()
	default:
		err = fmt.Errorf("unknown helper %q", args[0])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", args, err)
		return 1
	}
	return 0
}

func atoi(s string) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(err)
	}
	return v
}

// holdUntilEOF says "granted" and reads stdin to its end.
func holdUntilEOF() {
	fmt.Println("granted")
	io.Copy(io.Discard, os.Stdin)
}

func helperWatch(name string) error {
	if w, err := Open(name); !errors.Is(err, os.ErrPermission) {
		if w != nil {
			w.Close()
		}
		return fmt.Errorf("read-write open without write permission: %v",
			err)
	}
	w, err := OpenWatch(name)
	if err != nil {
		return err
	}
	defer w.Close()
	if _, err := w.Stat(); err != nil {
		return err
	}
	if w.TryAcquire(1) {
		return errors.New("a watch acquired")
	}
	return nil
}

func helperGo(name string, n int64) error {
	w, err := Open(name)
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.Acquire(context.Background(), n); err != nil {
		return err
	}
	holdUntilEOF()
	w.Release(n)
	return nil
}

func helperGoCancel(name string, n int64) error {
	w, err := Open(name)
	if err != nil {
		return err
	}
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	err = w.Acquire(ctx, n)
	fmt.Println("acquire:", err)
	if err != context.Canceled {
		return fmt.Errorf("Acquire: %v, want %v", err, context.Canceled)
	}
	if held := mustHeld(w); held != 0 {
		return fmt.Errorf("a cancelled Acquire holds %d", held)
	}
	return nil
}

func mustHeld(w *Weighted) int64 {
	st, err := w.Stat()
	if err != nil {
		return -1
	}
	return st.Held
}

// helperAsync is a waiter of an event loop in another language: one
// handle, WSEM_ACQUIRE_ASYNC, poll(2) for POLLIN, WSEM_IOC_ASYNC.
func helperAsync(name string, n int64) error {
	fd, err := syscall.Open(devicePath, syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	open := openArgs{size: uint64(unsafe.Sizeof(openArgs{}))}
	setName(&open.name, name)
	if _, err := ioctl(uintptr(fd), iocOpen, unsafe.Pointer(&open)); err != nil {
		return fmt.Errorf("open: %w", err)
	}
	acq := acquireArgs{size: uint64(unsafe.Sizeof(acquireArgs{})),
		weight: uint64(n), flags: acquireAsync}
	_, err = ioctl(uintptr(fd), iocAcquire, unsafe.Pointer(&acq))
	if err != nil && err != syscall.EINPROGRESS {
		return fmt.Errorf("acquire: %w", err)
	}
	for err == syscall.EINPROGRESS {
		if perr := pollIn(fd); perr != nil {
			return perr
		}
		_, err = ioctlU64(uintptr(fd), iocAsync, 0)
	}
	if err != nil {
		return fmt.Errorf("the request ended with %w", err)
	}
	holdUntilEOF()
	return syscall.Close(fd) // the weight goes with the handle
}

// pollIn waits in poll(2) (ppoll, which every architecture has) until fd
// is readable.
func pollIn(fd int) error {
	pfd := struct {
		fd             int32
		events, revent int16
	}{fd: int32(fd), events: 0x1} // POLLIN
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_PPOLL,
			uintptr(unsafe.Pointer(&pfd)), 1, 0, 0, 0, 0)
		if e == 0 {
			return nil
		}
		if e != syscall.EINTR {
			return e
		}
	}
}

func helperFD(n int64) error {
	w, err := OpenFD(3)
	if err != nil {
		return err
	}
	os.NewFile(3, "inherited").Close()
	defer w.Close()
	if !w.TryAcquire(n) {
		return fmt.Errorf("TryAcquire(%d) failed", n)
	}
	holdUntilEOF()
	return nil
}

// helperJob is a job of the pool example: holding the lock DIR/lock it
// counts itself in DIR/count ("running most"), works until the most has
// reached n (or for 10 s: a slow machine still sees the limit reached, a
// limit below n fails), and counts itself out.  The lock is a directory,
// since mkdir(2) is atomic everywhere (the debug kernel has no flock).
func helperJob(dir string, n int64) error {
	var most int64
	add := func(d int64) error {
		for {
			err := os.Mkdir(dir+"/lock", 0o700)
			if err == nil {
				break
			}
			if !os.IsExist(err) {
				return err
			}
			time.Sleep(time.Millisecond)
		}
		defer os.Remove(dir + "/lock")
		f, err := os.OpenFile(dir+"/count", os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		var now int64
		fmt.Fscan(f, &now, &most)
		now += d
		if now > most {
			most = now
		}
		f.Truncate(0)
		_, err = f.WriteAt([]byte(fmt.Sprintf("%d %d\n", now, most)), 0)
		return err
	}
	if err := add(1); err != nil {
		return err
	}
	for end := time.Now().Add(10 * time.Second); most < n &&
		time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
		if err := add(0); err != nil {
			return err
		}
	}
	time.Sleep(20 * time.Millisecond)
	return add(-1)
}

// helperLend lends w through a Weighted of its inherited handle 3: with
// want "ok" it says "granted" and lends until stdin closes (or it is
// killed); with "eperm" the Lend must fail with EPERM, and then it says
// "granted" and waits as well.
func helperLend(w int64, want string) error {
	sem, err := OpenFD(3)
	if err != nil {
		return err
	}
	os.NewFile(3, "inherited").Close()
	defer sem.Close()
	err = sem.Lend(w)
	switch {
	case want == "ok" && err != nil:
		return err
	case want == "eperm" && !errors.Is(err, syscall.EPERM):
		return fmt.Errorf("Lend(%d): %v, want EPERM", w, err)
	}
	holdUntilEOF()
	return nil
}
