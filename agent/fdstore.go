// SPDX-License-Identifier: GPL-2.0

package main

// The lending handles kept across a restart: the service manager's file
// descriptor store (systemd's FileDescriptorStoreMax=; sd_notify(3)'s
// FDSTORE=1 and FDSTOREREMOVE=1, sd_listen_fds(3)'s LISTEN_FDS).  Once a
// limit has started, the agent sends a duplicate of the handle that lends
// the host's share to the store, named for the limit (storeName); the
// store keeps the handle open while the agent restarts, so the loan goes
// on, with its kernel deadline, and what holds weight under it keeps
// running.  The next agent takes the handle back (takeStored, AdoptFD)
// and lends through it again under its own lease.  When the unit stops
// for good, the store closes the handle: the kernel withdraws the loan,
// as at an agent's death.
//
// The store is used only when the environment says it is there:
// NOTIFY_SOCKET, and FDSTORE above 0 (which systemd 254 and later set from
// FileDescriptorStoreMax=, and wsem-agent.service sets for older ones).

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

var stored struct {
	mu  sync.Mutex
	fds map[string]int // the store's handles passed at start, by name
}

// fdStoreOn says whether a file descriptor store takes the agent's
// handles.
func fdStoreOn() bool {
	n, err := strconv.Atoi(os.Getenv("FDSTORE"))
	return err == nil && n > 0 && os.Getenv("NOTIFY_SOCKET") != ""
}

// storeName is lim's handle's name in the store: FDNAME allows up to 255
// printable characters but ':'; a longer key is named by its hash.
func storeName(lim *limit) string {
	key := url.QueryEscape(lim.prefix + "/" + lim.name + "@" + lim.host)
	if len(key) > 200 {
		sum := sha256.Sum256([]byte(key))
		key = hex.EncodeToString(sum[:16])
	}
	return "wsem-lend." + key
}

// takeListenFDs takes the descriptors passed at start (LISTEN_PID this
// process, LISTEN_FDS from 3 on, LISTEN_FDNAMES), close-on-exec, and
// clears those variables, as sd_listen_fds(3) does.
func takeListenFDs() {
	pid := os.Getenv("LISTEN_PID")
	n, err := strconv.Atoi(os.Getenv("LISTEN_FDS"))
	names := strings.Split(os.Getenv("LISTEN_FDNAMES"), ":")
	os.Unsetenv("LISTEN_PID")
	os.Unsetenv("LISTEN_FDS")
	os.Unsetenv("LISTEN_FDNAMES")
	if pid != strconv.Itoa(os.Getpid()) || err != nil || n <= 0 {
		return
	}
	stored.mu.Lock()
	defer stored.mu.Unlock()
	stored.fds = map[string]int{}
	for i := 0; i < n; i++ {
		fd := 3 + i
		syscall.CloseOnExec(fd)
		if i < len(names) && strings.HasPrefix(names[i], "wsem-lend.") {
			stored.fds[names[i]] = fd
		} else {
			syscall.Close(fd)
		}
	}
}

// takeStored is the store's handle of that name, taken out of the passed
// ones, or -1.
func takeStored(name string) int {
	stored.mu.Lock()
	defer stored.mu.Unlock()
	fd, ok := stored.fds[name]
	if !ok {
		return -1
	}
	delete(stored.fds, name)
	return fd
}

// dropUnclaimed closes the passed handles that no limit of lims takes
// (its line is gone from the configuration) and removes them from the
// store: their loans end now.
func dropUnclaimed(lims []*limit) {
	keep := map[string]bool{}
	for _, lim := range lims {
		keep[storeName(lim)] = true
	}
	stored.mu.Lock()
	defer stored.mu.Unlock()
	for name, fd := range stored.fds {
		if keep[name] {
			continue
		}
		lg.Printf("a kept lending handle (%s) serves no limit of the "+
			"configuration: closed, its loan ends", name)
		syscall.Close(fd)
		delete(stored.fds, name)
		unstoreFD(name)
	}
}

// notify sends one sd_notify(3) message, with the descriptor f if not
// nil, to NOTIFY_SOCKET (a path, or '@' and an abstract name).
func notify(msg string, f *os.File) error {
	s, err := syscall.Socket(syscall.AF_UNIX,
		syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("socket", err)
	}
	defer syscall.Close(s)
	var oob []byte
	if f != nil {
		oob = syscall.UnixRights(int(f.Fd()))
	}
	to := &syscall.SockaddrUnix{Name: os.Getenv("NOTIFY_SOCKET")}
	return os.NewSyscallError("sendmsg",
		syscall.Sendmsg(s, []byte(msg), oob, to, 0))
}

// storeFD puts a duplicate of f in the store under name: true if sent.
func storeFD(name string, f *os.File) bool {
	err := notify("FDSTORE=1\nFDNAME="+name+"\n", f)
	if err != nil {
		lg.Printf("%s: not kept in the file descriptor store: %v "+
			"(a restart ends the loan)", name, err)
	}
	return err == nil
}

// unstoreFD has the store close its handle of that name.
func unstoreFD(name string) {
	if err := notify("FDSTOREREMOVE=1\nFDNAME="+name+"\n", nil); err != nil {
		lg.Printf("%s: not removed from the file descriptor store: %v",
			name, err)
	}
}
