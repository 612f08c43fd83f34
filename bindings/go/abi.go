// SPDX-License-Identifier: LGPL-2.1-or-later

package wsem

// The kernel ABI of uapi/linux/wsem.h, restated in Go: the ioctl command
// numbers, the argument structs (their Go layout matches the C one on
// every 64-bit and 32-bit Linux target, since all fields are naturally
// aligned and explicitly padded) and the few system calls around them.
// abi_test.go checks the sizes; the host test go_abi_test.sh checks the
// numbers against the C header itself.

import (
	"syscall"
	"unsafe"
)

const devicePath = "/dev/wsem"

const (
	wsemNameMax     = 64
	wsemCapacityMax = 1 << 62
	wsemFSMagic     = 0x7773656d
)

// struct wsem_open_args.flags
const (
	openCreat = 1 << 0
	openExcl  = 1 << 1
	openAnon  = 1 << 2
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
)

type openArgs struct {
	size     uint64
	flags    uint64
	capacity uint64
	mode     uint32
	_        uint32
	name     [wsemNameMax]byte
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

// statArgs is struct wsem_stat (WSEM_STAT_SIZE_VER1).
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
}

// The _IOC() encoding of asm-generic/ioctl.h, which x86, arm64, riscv and
// s390 share.
const (
	iocWrite = 1
	iocRead  = 2
	iocMagic = 0xB9
)

func ioc(dir, nr, size uintptr) uintptr {
	return dir<<30 | size<<16 | iocMagic<<8 | nr
}

var (
	iocOpen        = ioc(iocWrite, 0x01, unsafe.Sizeof(openArgs{}))
	iocReopen      = ioc(iocWrite, 0x02, 8)
	iocAcquire     = ioc(iocWrite, 0x03, unsafe.Sizeof(acquireArgs{}))
	iocRelease     = ioc(iocWrite, 0x04, 8)
	iocSetCapacity = ioc(iocWrite, 0x05, 8)
	iocStat        = ioc(iocWrite|iocRead, 0x06, unsafe.Sizeof(statArgs{}))
	iocUnlink      = ioc(iocWrite, 0x07, unsafe.Sizeof(unlinkArgs{}))
	iocAsync       = ioc(iocWrite, 0x0a, 8)
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
