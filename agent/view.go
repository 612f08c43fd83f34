// SPDX-License-Identifier: GPL-2.0

package main

// What "wsem stat NAME" shows of a cluster limit, without ever talking to
// etcd: after each look at etcd, the agent writes the limit as it last
// read it there to /run/wsem-agent/IPCNS/NAME, IPCNS being the inode
// number of its IPC namespace (/proc/self/ns/ipc: 4026531839 on the
// host) and NAME its semaphore's.  Written to a temporary file renamed
// over the old one, so a reader sees one whole view; with the
// semaphore's owner, group and read bits, so whoever may read the
// semaphore may read it.  Removed when the agent stops; one that an
// agent left when it died stays, and wsem stat shows how old it is.
//
// One "KEY VALUE..." a line, the first line the format's version; a
// reader skips keys it does not know:
//
//	wsem-agent-view 1
//	name NAME          the semaphore
//	id ID              its id (wsem-id in fdinfo)
//	pid PID            the agent
//	this HOST          this host's name in etcd
//	prefix PREFIX      where the limit is in etcd
//	look NS            CLOCK_BOOTTIME at the end of the look that wrote it
//	refresh NS         a running agent's next look ends within this
//	read NS            CLOCK_BOOTTIME when the view below was read
//	revision REV       etcd's revision of that read
//	capacity N         the cluster's
//	free N             what no host has a share of
//	failing NS TEXT    (only if the last look failed) failing since NS,
//	                   TEXT the last look's error
//	host HOST SHARE NEED FLOOR QUEUE ALIVE
//	                   one a host, as wsem-agent status prints it (QUEUE
//	                   0: not queued; ALIVE 1 or 0)
//
// In NAME, HOST and PREFIX, '%', blanks and control bytes are written
// %XX (hex); in TEXT, control bytes are blanks.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// runDir holds the agents' lock files (lockHost) and their views, a
// directory for each IPC namespace, where wsem stat reads them: the unit's
// RuntimeDirectory, made here if the agent runs without the unit (a
// test's temporary directory).
var runDir = "/run/wsem-agent"

// A readView is what the store last read from etcd.
type readView struct {
	v   *view
	rev int64
	at  time.Duration // CLOCK_BOOTTIME
}

// A viewFile is the agent's view file.
type viewFile struct {
	path    string        // "" until first written
	id      int64         // the semaphore's id, 0 until read
	failing time.Duration // when the looks began to fail; 0: they do not
	logged  string        // the last error writing it, said once
}

// bootTime is CLOCK_BOOTTIME: the clock of every process of the host,
// which no one sets.
func bootTime() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// publish writes the view after a look that ended with err.  It never
// fails the agent: an error writing it is logged (once until it changes).
func (a *agent) publish(err error) {
	if errors.Is(err, context.Canceled) {
		return // stopping: leave() removes it
	}
	f := &a.shown
	now := bootTime()
	if err == nil {
		f.failing = 0
	} else if f.failing == 0 {
		f.failing = now
	}
	if a.st.last.v == nil {
		return
	}
	werr := a.writeView(a.viewText(now, err, a.semID()))
	if werr == nil {
		f.logged = ""
	} else if werr.Error() != f.logged {
		f.logged = werr.Error()
		lg.Printf("%s: no view for wsem stat: %v", a.lim.name, werr)
	}
}

// viewText is the file's text, as the header says: the view after a look
// that ended at now with err, of the semaphore of that id.
func (a *agent) viewText(now time.Duration, err error, id int64) []byte {
	var b bytes.Buffer
	last := a.st.last
	refresh := time.Duration(a.lim.ttl)*time.Second + a.lim.hold
	fmt.Fprintf(&b, "wsem-agent-view 1\nname %s\nid %d\npid %d\n",
		viewWord(a.lim.name), id, os.Getpid())
	fmt.Fprintf(&b, "this %s\nprefix %s\n", viewWord(a.lim.host),
		viewWord(a.st.prefix))
	fmt.Fprintf(&b, "look %d\nrefresh %d\nread %d\nrevision %d\n",
		now, refresh, last.at, last.rev)
	fmt.Fprintf(&b, "capacity %d\nfree %d\n", last.v.capacity,
		last.v.free())
	if err != nil {
		fmt.Fprintf(&b, "failing %d %s\n", a.shown.failing,
			oneLine(err.Error()))
	}
	// (a line per host, made without fmt: at 1,000 hosts fmt was a
	// large part of a look's time)
	line := make([]byte, 0, 64)
	for _, h := range last.v.hostRows(a.lim.host) {
		alive := int64(0)
		if h.Alive {
			alive = 1
		}
		line = append(line[:0], "host "...)
		line = appendViewWord(line, h.Host)
		for _, n := range []int64{h.Share, h.Need, h.Floor,
			int64(h.Queue), alive} {
			line = append(line, ' ')
			line = strconv.AppendInt(line, n, 10)
		}
		b.Write(append(line, '\n'))
	}
	return b.Bytes()
}

// semID is the semaphore's id as its fdinfo says (wsem-id), 0 if unknown.
func (a *agent) semID() int64 {
	if a.shown.id != 0 {
		return a.shown.id
	}
	fi, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d",
		a.loc.watch.Fd()))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(fi), "\n") {
		if strings.HasPrefix(line, "wsem-id:") {
			a.shown.id, _ = strconv.ParseInt(strings.TrimSpace(
				line[len("wsem-id:"):]), 10, 64)
		}
	}
	return a.shown.id
}

// writeView puts text in place of the view file, whole.
func (a *agent) writeView(text []byte) error {
	var ns syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/ipc", &ns); err != nil {
		return err
	}
	dir := filepath.Join(runDir, strconv.FormatUint(ns.Ino, 10))
	if err := os.MkdirAll(dir, 0755); err != nil {
		return err
	}
	st, err := a.loc.w.Stat()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+a.lim.name+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(text)
	if err == nil {
		err = tmp.Chmod(st.Mode.Perm() & 0444)
	}
	if err == nil {
		// (an agent that is not root keeps its own)
		tmp.Chown(int(st.UID), int(st.GID))
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	path := filepath.Join(dir, a.lim.name)
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	a.shown.path = path
	return nil
}

// unpublish removes the view file: the agent stops.
func (a *agent) unpublish() {
	if a.shown.path != "" {
		os.Remove(a.shown.path)
	}
}

// viewWord is s as one word of the file: '%', blanks and control bytes
// as %XX, and "" as %00.
func viewWord(s string) string {
	return string(appendViewWord(nil, s))
}

// appendViewWord appends viewWord(s) to b.
func appendViewWord(b []byte, s string) []byte {
	if s == "" {
		return append(b, "%00"...)
	}
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == 0x7f || c == '%' {
			b = append(b, '%', hex[c>>4], hex[c&15])
		} else {
			b = append(b, c)
		}
	}
	return b
}

// oneLine is s on one line: control bytes as blanks, at most 300 bytes.
func oneLine(s string) string {
	if len(s) > 300 {
		s = strings.ToValidUTF8(s[:300], "")
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
