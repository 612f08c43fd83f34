// SPDX-License-Identifier: LGPL-2.1-or-later

package wsem

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// goABI is what this package believes uapi/linux/wsem.h says, by the C
// names.
func goABI() map[string]uint64 {
	return map[string]uint64{
		"WSEM_IOC_OPEN":                    uint64(iocOpen),
		"WSEM_IOC_REOPEN":                  uint64(iocReopen),
		"WSEM_IOC_ACQUIRE":                 uint64(iocAcquire),
		"WSEM_IOC_RELEASE":                 uint64(iocRelease),
		"WSEM_IOC_SET_CAPACITY":            uint64(iocSetCapacity),
		"WSEM_IOC_STAT":                    uint64(iocStat),
		"WSEM_IOC_UNLINK":                  uint64(iocUnlink),
		"WSEM_IOC_ASYNC":                   uint64(iocAsync),
		"sizeof(struct wsem_open_args)":    uint64(unsafe.Sizeof(openArgs{})),
		"sizeof(struct wsem_acquire_args)": uint64(unsafe.Sizeof(acquireArgs{})),
		"sizeof(struct wsem_stat)":         uint64(unsafe.Sizeof(statArgs{})),
		"sizeof(struct wsem_unlink_args)":  uint64(unsafe.Sizeof(unlinkArgs{})),
		"WSEM_OPEN_CREAT":                  openCreat,
		"WSEM_OPEN_EXCL":                   openExcl,
		"WSEM_OPEN_ANON":                   openAnon,
		"WSEM_ACQUIRE_TRY":                 acquireTry,
		"WSEM_ACQUIRE_ASYNC":               acquireAsync,
		"WSEM_REOPEN_CLOEXEC":              reopenCloexec,
		"WSEM_ASYNC_CANCEL":                asyncCancel,
		"WSEM_NAME_MAX":                    wsemNameMax,
		"WSEM_CAPACITY_MAX":                wsemCapacityMax,
		"WSEM_FS_MAGIC":                    wsemFSMagic,
	}
}

// The command numbers and struct sizes against the C header: the file that
// WSEM_GO_ABI names ("NAME VALUE" lines, which selftests/host/go_abi_test.sh
// prints with the C compiler), else the values it printed when this was
// written, on x86-64.
func TestABI(t *testing.T) {
	want := map[string]uint64{
		"WSEM_IOC_OPEN": 0x4060b901, "WSEM_IOC_REOPEN": 0x4008b902,
		"WSEM_IOC_ACQUIRE": 0x4028b903, "WSEM_IOC_RELEASE": 0x4008b904,
		"WSEM_IOC_SET_CAPACITY": 0x4008b905, "WSEM_IOC_STAT": 0xc0c8b906,
		"WSEM_IOC_UNLINK": 0x4050b907, "WSEM_IOC_ASYNC": 0x4008b90a,
		"sizeof(struct wsem_stat)": 200,
	}
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
	if len(want) < 9 {
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
