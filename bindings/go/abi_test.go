// SPDX-License-Identifier: LGPL-2.1-or-later

package wsem

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// goABI is what this package believes uapi/linux/wsem.h says, by the C
// names.
func goABI() map[string]uint64 {
	m := map[string]uint64{
		"sizeof(struct wsem_open_args)":     uint64(unsafe.Sizeof(openArgs{})),
		"sizeof(struct wsem_acquire_args)":  uint64(unsafe.Sizeof(acquireArgs{})),
		"sizeof(struct wsem_stat)":          uint64(unsafe.Sizeof(statArgs{})),
		"sizeof(struct wsem_unlink_args)":   uint64(unsafe.Sizeof(unlinkArgs{})),
		"sizeof(struct wsem_list_args)":     uint64(unsafe.Sizeof(listArgs{})),
		"sizeof(struct wsem_holder)":        uint64(unsafe.Sizeof(holderEntry{})),
		"sizeof(struct wsem_holders_args)":  uint64(unsafe.Sizeof(holdersArgs{})),
		"sizeof(struct wsem_label_args)":    uint64(unsafe.Sizeof(labelArgs{})),
		"sizeof(struct wsem_lend_args)":     uint64(unsafe.Sizeof(lendArgs{})),
		"sizeof(struct wsem_many_entry)":    uint64(unsafe.Sizeof(manyEntry{})),
		"sizeof(struct wsem_many_args)":     uint64(unsafe.Sizeof(manyArgs{})),
		"sizeof(struct wsem_counters)":      uint64(unsafe.Sizeof(counters{})),
		"WSEM_COUNTERS_SIZE_VER0":           uint64(unsafe.Sizeof(counters{})),
		"WSEM_COUNTERS_GONE":                countersGone,
		"sizeof(struct wsem_tree_counters)": uint64(unsafe.Sizeof(treeCounters{})),
		"WSEM_TREE_COUNTERS_SIZE_VER0":      uint64(unsafe.Sizeof(treeCounters{})),
		"WSEM_MMAP_TREE":                    mmapTree,
		"WSEM_TREE_WAITING":                 treeWaiting,
		"WSEM_TREE_OVER":                    treeOver,
		"WSEM_HOLDER_WAITING":               holderWaiting,
		"WSEM_HOLDER_CHILD":                 holderChild,
		"WSEM_OPEN_CHILD":                   openChild,
		"WSEM_DEPTH_MAX":                    depthMax,
		"WSEM_MANY_MAX":                     manyMax,
		"WSEM_LABEL_MAX":                    wsemLabelMax,
		"WSEM_CGROUP_MAX":                   wsemCgroupMax,
		"WSEM_OPEN_CREAT":                   openCreat,
		"WSEM_OPEN_EXCL":                    openExcl,
		"WSEM_OPEN_ANON":                    openAnon,
		"WSEM_OPEN_LOANS":                   openLoans,
		"WSEM_LEND_END_HOLDERS":             lendEndHolders,
		"WSEM_LEND_DEADLINE":                lendDeadline,
		"WSEM_ACQUIRE_TRY":                  acquireTry,
		"WSEM_ACQUIRE_ASYNC":                acquireAsync,
		"WSEM_REOPEN_CLOEXEC":               reopenCloexec,
		"WSEM_ASYNC_CANCEL":                 asyncCancel,
		"WSEM_NAME_MAX":                     wsemNameMax,
		"WSEM_CAPACITY_MAX":                 wsemCapacityMax,
		"WSEM_FS_MAGIC":                     wsemFSMagic,
	}
	for name, v := range map[string]uintptr{
		"WSEM_IOC_OPEN": iocOpen, "WSEM_IOC_REOPEN": iocReopen,
		"WSEM_IOC_ACQUIRE": iocAcquire, "WSEM_IOC_RELEASE": iocRelease,
		"WSEM_IOC_SET_CAPACITY": iocSetCapacity, "WSEM_IOC_STAT": iocStat,
		"WSEM_IOC_UNLINK": iocUnlink, "WSEM_IOC_LIST": iocList,
		"WSEM_IOC_HOLDERS": iocHolders, "WSEM_IOC_ASYNC": iocAsync,
		"WSEM_IOC_WAIT_IDLE": iocWaitIdle, "WSEM_IOC_SET_LABEL": iocSetLabel,
		"WSEM_IOC_LEND":         iocLend,
		"WSEM_IOC_ACQUIRE_MANY": iocAcquireMany,
	} {
		m[name] = uint64(v)
	}
	return m
}

// What the C compiler made of every WSEM_IOC_* with each architecture's
// <asm/ioctl.h> (Linux 6.12's), by GOARCH; go_abi_test.sh checks the same
// against the kernel source's headers where the source is installed.
var iocTable = map[string]map[string]uint64{
	"amd64": {
		"WSEM_IOC_OPEN": 0x4068b901, "WSEM_IOC_REOPEN": 0x4008b902,
		"WSEM_IOC_ACQUIRE": 0x4028b903, "WSEM_IOC_RELEASE": 0x4008b904,
		"WSEM_IOC_SET_CAPACITY": 0x4008b905, "WSEM_IOC_STAT": 0xc0f0b906,
		"WSEM_IOC_UNLINK": 0x4050b907, "WSEM_IOC_LIST": 0xc020b908,
		"WSEM_IOC_HOLDERS": 0xc030b909, "WSEM_IOC_ASYNC": 0x4008b90a,
		"WSEM_IOC_WAIT_IDLE": 0x4028b90b, "WSEM_IOC_SET_LABEL": 0x4050b90c,
		"WSEM_IOC_LEND":         0x4020b90e,
		"WSEM_IOC_ACQUIRE_MANY": 0x4028b90f,
	},
	"ppc64le": {
		"WSEM_IOC_OPEN": 0x8068b901, "WSEM_IOC_REOPEN": 0x8008b902,
		"WSEM_IOC_ACQUIRE": 0x8028b903, "WSEM_IOC_RELEASE": 0x8008b904,
		"WSEM_IOC_SET_CAPACITY": 0x8008b905, "WSEM_IOC_STAT": 0xc0f0b906,
		"WSEM_IOC_UNLINK": 0x8050b907, "WSEM_IOC_LIST": 0xc020b908,
		"WSEM_IOC_HOLDERS": 0xc030b909, "WSEM_IOC_ASYNC": 0x8008b90a,
		"WSEM_IOC_WAIT_IDLE": 0x8028b90b, "WSEM_IOC_SET_LABEL": 0x8050b90c,
		"WSEM_IOC_LEND":         0x8020b90e,
		"WSEM_IOC_ACQUIRE_MANY": 0x8028b90f,
	},
}

// Each architecture's encoding: asm-generic's for x86, arm and the rest;
// a 3-bit direction with write 4 for powerpc, mips, sparc and alpha;
// write 2, read 1 for parisc (whose _IOW and _IOWR come out as
// powerpc's for these sizes).
func TestIOCArch(t *testing.T) {
	same := map[string]string{
		"386": "amd64", "arm": "amd64", "arm64": "amd64",
		"riscv64": "amd64", "s390x": "amd64", "loong64": "amd64",
		"ppc64": "ppc64le", "ppc": "ppc64le", "mips64le": "ppc64le",
		"mips64": "ppc64le", "mipsle": "ppc64le", "mips": "ppc64le",
		"sparc64": "ppc64le", "alpha": "ppc64le", "hppa": "ppc64le",
	}
	for arch, ref := range same {
		got := iocNumbers(iocLayoutOf(arch))
		for name, v := range iocTable[ref] {
			if uint64(got[name]) != v {
				t.Errorf("%s: %s is 0x%x, want 0x%x", arch, name,
					got[name], v)
			}
		}
	}
	if l := iocLayoutOf("mips64le"); l.sizeBits != 13 {
		t.Errorf("mips64le: a %d-bit size field, want 13", l.sizeBits)
	}
	if l := iocLayoutOf("hppa"); l.sizeBits != 14 || l.read != 1 {
		t.Errorf("hppa: %+v, want a 14-bit size and read 1", l)
	}
}

// The numbers under each architecture's layout against the files in
// $WSEM_GO_IOC_DIR, GOARCH.txt each ("NAME VALUE" lines), which
// go_abi_test.sh prints with the C compiler and that architecture's
// <asm/ioctl.h>.
func TestIOCArchFromC(t *testing.T) {
	dir := os.Getenv("WSEM_GO_IOC_DIR")
	if dir == "" {
		// Not a skip: go_abi_test.sh runs it on the host with the
		// kernel's headers, and TestIOCArch has the table.
		t.Log("WSEM_GO_IOC_DIR is not set: compared on the host only")
		return
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil || len(files) < 2 {
		t.Fatalf("%s: %d files (%v)", dir, len(files), err)
	}
	for _, f := range files {
		arch := strings.TrimSuffix(filepath.Base(f), ".txt")
		got := iocNumbers(iocLayoutOf(arch))
		want := readABI(t, f)
		if len(want) != len(got) {
			t.Errorf("%s: %d commands in C, %d here", arch, len(want),
				len(got))
		}
		for name, v := range want {
			if uint64(got[name]) != v {
				t.Errorf("%s: %s is 0x%x here, 0x%x in C", arch,
					name, got[name], v)
			}
		}
	}
}

// The command numbers and struct sizes against the C header: the file that
// WSEM_GO_ABI names ("NAME VALUE" lines, which selftests/host/go_abi_test.sh
// prints with the C compiler), else the table above for this architecture.
func TestABI(t *testing.T) {
	want := iocTable[runtime.GOARCH]
	if want == nil {
		want = map[string]uint64{}
	}
	want["sizeof(struct wsem_stat)"] = 240
	want["sizeof(struct wsem_lend_args)"] = 32
	want["sizeof(struct wsem_holder)"] = 368
	want["sizeof(struct wsem_open_args)"] = 104
	want["sizeof(struct wsem_holders_args)"] = 48
	want["sizeof(struct wsem_many_args)"] = 40
	if path := os.Getenv("WSEM_GO_ABI"); path != "" {
		want = readABI(t, path)
	}
	got := goABI()
	for name, v := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s: not known here", name)
		case g != v:
			t.Errorf("%s: 0x%x here, 0x%x in C", name, g, v)
		}
	}
	if len(want) < 2 {
		t.Errorf("only %d values to compare", len(want))
	}
}

func readABI(t *testing.T, path string) map[string]uint64 {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := make(map[string]uint64)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		i := strings.LastIndexByte(sc.Text(), ' ')
		if i < 0 {
			t.Fatalf("%s: bad line %q", path, sc.Text())
		}
		v, err := strconv.ParseUint(sc.Text()[i+1:], 0, 64)
		if err != nil {
			t.Fatal(err)
		}
		m[sc.Text()[:i]] = v
	}
	return m
}
