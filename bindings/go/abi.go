// SPDX-License-Identifier: LGPL-2.1-or-later

package wsem

// The kernel ABI of uapi/linux/wsem.h, restated in Go: the ioctl command
// numbers, the argument structs (their Go layout matches the C one on
// every 64-bit and 32-bit Linux target, since all fields are naturally
// aligned and explicitly padded) and the few system calls around them.
// abi_test.go checks the sizes and each architecture's command numbers;
// the host test go_abi_test.sh checks them against the C header itself,
// on this machine's architecture and with each architecture's
// <asm/ioctl.h> from the kernel's source.

import (
	"runtime"
	"syscall"
	"unsafe"
)

const devicePath = "/dev/wsem"

const (
	wsemNameMax     = 64
	wsemCapacityMax = 1 << 62
	wsemFSMagic     = 0x7773656d
	wsemLabelMax    = 64
	wsemCgroupMax   = 256
)

// struct wsem_open_args.flags
const (
	openCreat = 1 << 0
	openExcl  = 1 << 1
	openAnon  = 1 << 2
	openLoans = 1 << 3
	openChild = 1 << 4
)

const (
	depthMax = 8 // WSEM_DEPTH_MAX
	manyMax  = 8 // WSEM_MANY_MAX
)

// struct wsem_acquire_args.flags
const (
	acquireTry      = 1 << 0
	acquireDeadline = 1 << 1
	acquireClock    = 1 << 2
	acquireAsync    = 1 << 3
)

const (
	reopenCloexec = 1 << 0 // WSEM_IOC_REOPEN
	asyncCancel   = 1 << 0 // WSEM_IOC_ASYNC
	holderWaiting = 1 << 0 // struct wsem_holder.flags
	holderChild   = 1 << 1 // struct wsem_holder.flags
)

type openArgs struct {
	size     uint64
	flags    uint64
	capacity uint64
	mode     uint32
	_        uint32
	name     [wsemNameMax]byte
	parentFD int32
	_        uint32
}

type acquireArgs struct {
	size       uint64
	weight     uint64
	flags      uint64
	deadlineNs uint64
	clockid    uint32
	_          uint32
}

type unlinkArgs struct {
	size  uint64
	flags uint64
	name  [wsemNameMax]byte
}

type listArgs struct {
	size     uint64
	stats    uint64
	count    uint32
	statSize uint32
	total    uint64
}

// holderEntry is struct wsem_holder (WSEM_HOLDER_SIZE_VER1).
type holderEntry struct {
	weight uint64
	ageNs  uint64
	flags  uint64
	pid    int32
	_      uint32
	comm   [16]byte
	cgroup [wsemCgroupMax]byte
	label  [wsemLabelMax]byte
}

type holdersArgs struct {
	size      uint64
	flags     uint64
	entries   uint64
	count     uint32
	entrySize uint32
	holders   uint32
	waiters   uint32
	children  uint32
	_         uint32
}

type manyEntry struct {
	fd     int32
	_      uint32
	weight uint64
}

type manyArgs struct {
	size       uint64
	flags      uint64
	deadlineNs uint64
	clockid    uint32
	count      uint32
	entries    uint64
}

type labelArgs struct {
	size  uint64
	flags uint64
	label [wsemLabelMax]byte
}

// statArgs is struct wsem_stat (WSEM_STAT_SIZE_VER3).
type statArgs struct {
	size         uint64
	capacity     uint64
	used         uint64
	available    uint64
	held         uint64
	waiters      uint64
	queuedWeight uint64
	uid          uint32
	gid          uint32
	mode         uint32
	_            uint32
	name         [wsemNameMax]byte
	grantsAtOnce uint64
	grantsWaited uint64
	timeouts     uint64
	interrupts   uint64
	shrunk       uint64
	waitNsTotal  uint64
	waitNsMax    uint64
	queueMax     uint64
	lent         uint64
	lentHere     uint64
	ceiling      uint64
	depth        uint64
	parentID     uint64
}

// struct wsem_lend_args.flags
const (
	lendEndHolders = 1 << 0 // WSEM_LEND_END_HOLDERS
	lendDeadline   = 1 << 1 // WSEM_LEND_DEADLINE
)

type lendArgs struct {
	size       uint64
	flags      uint64
	capacity   uint64
	deadlineNs uint64
}

// How one architecture's <asm/ioctl.h> encodes _IOC(dir, type, nr, size):
// nr in bits 0-7, type in 8-15, size from bit 16 on, dir above the size.
// asm-generic (x86, arm, arm64, riscv, s390, loongarch, ...) has a 14-bit
// size and a 2-bit dir with write 1, read 2; powerpc, mips, sparc and alpha
// a 13-bit size and a 3-bit dir with none 1, read 2, write 4; parisc the
// generic layout with write 2, read 1.
type iocLayout struct {
	sizeBits uint
	write    uintptr
	read     uintptr
}

var (
	iocGeneric = iocLayout{sizeBits: 14, write: 1, read: 2}
	iocDir3    = iocLayout{sizeBits: 13, write: 4, read: 2}
	iocParisc  = iocLayout{sizeBits: 14, write: 2, read: 1}
)

// iocLayoutOf is the layout of GOARCH arch (gc's and gccgo's names).
func iocLayoutOf(arch string) iocLayout {
	switch arch {
	case "ppc", "ppc64", "ppc64le", "mips", "mipsle", "mips64",
		"mips64le", "mips64p32", "mips64p32le", "sparc", "sparc64",
		"alpha":
		return iocDir3
	case "hppa", "parisc", "parisc64":
		return iocParisc
	}
	return iocGeneric
}

const iocMagic = 0xB9

// iocW and iocWR are _IOW(0xB9, nr, size) and _IOWR(0xB9, nr, size).
func (l iocLayout) iocW(nr, size uintptr) uintptr {
	return l.ioc(l.write, nr, size)
}

func (l iocLayout) iocWR(nr, size uintptr) uintptr {
	return l.ioc(l.read|l.write, nr, size)
}

func (l iocLayout) ioc(dir, nr, size uintptr) uintptr {
	if size >= 1<<l.sizeBits {
		panic("wsem: ioctl argument too large for _IOC")
	}
	return dir<<(16+l.sizeBits) | size<<16 | iocMagic<<8 | nr
}

// iocNumbers is every WSEM_IOC_* command under layout l, by its C name.
func iocNumbers(l iocLayout) map[string]uintptr {
	return map[string]uintptr{
		"WSEM_IOC_OPEN":         l.iocW(0x01, unsafe.Sizeof(openArgs{})),
		"WSEM_IOC_REOPEN":       l.iocW(0x02, 8),
		"WSEM_IOC_ACQUIRE":      l.iocW(0x03, unsafe.Sizeof(acquireArgs{})),
		"WSEM_IOC_RELEASE":      l.iocW(0x04, 8),
		"WSEM_IOC_SET_CAPACITY": l.iocW(0x05, 8),
		"WSEM_IOC_STAT":         l.iocWR(0x06, unsafe.Sizeof(statArgs{})),
		"WSEM_IOC_UNLINK":       l.iocW(0x07, unsafe.Sizeof(unlinkArgs{})),
		"WSEM_IOC_LIST":         l.iocWR(0x08, unsafe.Sizeof(listArgs{})),
		"WSEM_IOC_HOLDERS":      l.iocWR(0x09, unsafe.Sizeof(holdersArgs{})),
		"WSEM_IOC_ASYNC":        l.iocW(0x0a, 8),
		"WSEM_IOC_WAIT_IDLE":    l.iocW(0x0b, unsafe.Sizeof(acquireArgs{})),
		"WSEM_IOC_SET_LABEL":    l.iocW(0x0c, unsafe.Sizeof(labelArgs{})),
		"WSEM_IOC_LEND":         l.iocW(0x0e, unsafe.Sizeof(lendArgs{})),
		"WSEM_IOC_ACQUIRE_MANY": l.iocW(0x0f, unsafe.Sizeof(manyArgs{})),
	}
}

// The commands on the architecture this program runs on.
var (
	hostIOC        = iocNumbers(iocLayoutOf(runtime.GOARCH))
	iocOpen        = hostIOC["WSEM_IOC_OPEN"]
	iocReopen      = hostIOC["WSEM_IOC_REOPEN"]
	iocAcquire     = hostIOC["WSEM_IOC_ACQUIRE"]
	iocRelease     = hostIOC["WSEM_IOC_RELEASE"]
	iocSetCapacity = hostIOC["WSEM_IOC_SET_CAPACITY"]
	iocStat        = hostIOC["WSEM_IOC_STAT"]
	iocUnlink      = hostIOC["WSEM_IOC_UNLINK"]
	iocList        = hostIOC["WSEM_IOC_LIST"]
	iocHolders     = hostIOC["WSEM_IOC_HOLDERS"]
	iocAsync       = hostIOC["WSEM_IOC_ASYNC"]
	iocWaitIdle    = hostIOC["WSEM_IOC_WAIT_IDLE"]
	iocSetLabel    = hostIOC["WSEM_IOC_SET_LABEL"]
	iocLend        = hostIOC["WSEM_IOC_LEND"]
	iocAcquireMany = hostIOC["WSEM_IOC_ACQUIRE_MANY"]
)

// ioctl issues one command; ptr points to its argument.  The pointer is
// converted in the call expression, as unsafe.Pointer's rules ask for.
func ioctl(fd uintptr, cmd uintptr, ptr unsafe.Pointer) (int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, cmd, uintptr(ptr))
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// ioctlU64 issues a command whose argument is one __u64.
func ioctlU64(fd uintptr, cmd uintptr, v uint64) (int, error) {
	return ioctl(fd, cmd, unsafe.Pointer(&v))
}

// setName copies a name into a zeroed WSEM_NAME_MAX buffer; a name that
// does not fit (or has a NUL) is EINVAL here, the kernel checks the rest.
func setName(dst *[wsemNameMax]byte, name string) error {
	if len(name) >= wsemNameMax {
		return syscall.EINVAL
	}
	for i := 0; i < len(name); i++ {
		if name[i] == 0 {
			return syscall.EINVAL
		}
		dst[i] = name[i]
	}
	return nil
}

// cString is the NUL-terminated string in b.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
