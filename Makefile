# SPDX-License-Identifier: GPL-2.0
#
# make              the library, the CLI, the selftests, and wsem.ko when the
#                   headers of the running kernel ($(KDIR)) are installed
# make module       wsem.ko against KDIR (our warnings are errors)
# make test         everything, as CI runs it: make check, then make
#                   check-debug beside make check-distro; ends with one
#                   "N passed, N failed" for the three
# make check-full   make test with the full tier on every kernel
# make check        lint, then the tests in QEMU on each Debian kernel (6.1,
#                   6.12, 6.12 PREEMPT_RT, 5.10, 7.2): the C programs on
#                   all, the shell tests (CLI, bindings, clients, agent)
#                   on 6.12 (CHECK_FULL=1: on all); ends with
#                   "N passed, N failed"
# make check-debug  the C programs on a 7.2 debug kernel (lockdep, KASAN,
#                   kmemleak, UBSAN, ...) built once per machine in the sid
#                   chroot and cached in /var/cache/wsem-debug-kernel
#                   (about 17 min on 2 CPUs, loaded)
# make check-distro  the .debs on Debian bookworm in QEMU: apt install,
#                   DKMS, a reboot into /etc/wsem.d's semaphores, podman
#                   containers gated on one of them (one killed; prints a
#                   timeline), apt purge; the image is built once per
#                   machine and cached in /var/cache/wsem-distro-image
# make storm        the full kill storm: 64 processes for 60 s on each kernel
#                   (make check runs 12 s); WSEM_STORM_SEED=... replays one
# make fuzz         the ioctl fuzzer at length: 10^7 requests on each kernel
#                   (2-3 min each, 15 on RT); WSEM_FUZZ_SEED=... replays one
# make check-host   the same tests on this machine (root, module loading)
# make demo         the main job: a VM in which wsem gates real weighted
#                   jobs, one of them killed mid-way; prints a timeline
# make install      wsem.ko (modules_install, when KDIR exists), libwsem,
#                   wsem.h, wsem.pc, the CLI, man pages, bash completion,
#                   the udev rule;
#                   DESTDIR and PREFIX (default /usr/local) are honoured
# make vm           a shell in a VM with wsem.ko loaded (KVER=... picks the
#                   kernel); with CMD='...' runs it there and returns its status
# make bench        wsem next to sem_t, SysV semop, eventfd and flock, every
#                   scenario in one VM boot (KVER=... picks the kernel,
#                   default 6.12); prints the table, writes bench/results.{txt,
#                   json,dat,png}; about 5 minutes on 2 CPUs; with
#                   BEFORE=<git rev> also builds that revision's module
#                   and runs uncontended, hand-off, mass grant,
#                   namespaces, long-hold, idle herd and jobserver
#                   with it, then
#                   with this tree's, in the same boot: a before / after
#                   table in build/bench-ba/last/compare.txt;
#                   WSEM_BENCH_SCENARIOS=a,b runs only those scenarios
# make bench-jobserver  three builds of FILES (default 200) generated C files
#                   each at once in one VM: one wsem limit through
#                   --jobserver, a plain make jobserver pipe, each -jC
#                   alone, one after another; wall and CPU time of each
#                   (bench/jobserver.sh; results in build/bench-jobserver/)
# make bench-cluster  a cluster limit on etcd in one VM (KVER=..., default
#                   6.12): one etcd member, three simulated hosts each with
#                   its wsem-agent; acquire+release with the host's share
#                   sufficing next to a plain semaphore's, acquire when the
#                   share must come from etcd, utilisation and largest wait
#                   under shifting demand against a static per-host split,
#                   the agent's CPU per share change (bench/cluster.sh;
#                   results in build/bench-cluster/); about 4 minutes;
#                   not part of make test.  WSEM_BC_SCALE="25 50": the
#                   scale scenario instead (simulated hosts on a 3-member
#                   etcd, today's agent beside bbe0767's: bench/README.md)
# make bench-host   the same program on this machine (needs /dev/wsem, or root
#                   and a built ./wsem.ko); results in build/bench-host/
# make lint         W=1 -Werror, sparse, kernel-doc, checkpatch, uapi header
# make clean

KDIR ?= /lib/modules/$(shell uname -r)/build
KVER ?=
CMD ?=
VM := selftests/vm

# CMD verbatim ($ and all), single-quoted for the shell.
cmd_arg = '$(subst ','\'',$(value CMD))'

.PHONY: all module userlib selftests test check-full check check-debug \
	check-distro \
	check-twoguest \
	check-host vm demo \
	install deb lint deps clean bench bench-host bench-bin storm fuzz \
	bench-jobserver bench-cluster

all: userlib selftests
ifneq ($(wildcard $(KDIR)/Makefile),)
all: module
else
all:
	@echo "make: no kernel headers in $(KDIR): wsem.ko not built" \
		"(make module KDIR=/usr/src/linux-headers-<version>)"
endif

userlib:
	$(MAKE) -C userlib

selftests: userlib
	$(MAKE) -C selftests
	$(MAKE) -C examples

module:
	$(MAKE) -C $(KDIR) M=$(CURDIR) W=1 KCFLAGS=-Werror modules

test:
	@bash $(VM)/check-all.sh

check-full:
	@CHECK_FULL=1 bash $(VM)/check-all.sh

check:
	@bash $(VM)/check.sh

check-debug:
	@bash $(VM)/check-debug.sh

check-distro:
	@bash $(VM)/check-distro.sh

check-twoguest:
	@bash $(VM)/twoguest.sh

# The long runs: one test program on every kernel, its knobs passed into
# the guest (WSEM_VM_ENV), lint left out.
long_env = $(foreach v,$(1),$(if $(value $(v)),$(v)=$(value $(v))))
storm:
	@NO_LINT=1 TESTS=storm_test TEST_TIMEOUT=300 VM_TIMEOUT=600 \
	WSEM_VM_ENV="WSEM_STORM_SECONDS=60 $(call long_env,WSEM_STORM_SEED)" \
	bash $(VM)/check.sh

fuzz:
	@NO_LINT=1 TESTS=fuzz_test TEST_TIMEOUT=1600 VM_TIMEOUT=1800 \
	WSEM_VM_ENV="WSEM_FUZZ_OPS=10000000 WSEM_FUZZ_SECONDS=1500 $(call long_env,WSEM_FUZZ_SEED)" \
	bash $(VM)/check.sh

check-host: userlib selftests module
	@bash $(VM)/host.sh

vm:
	@$(MAKE) -s --no-print-directory userlib selftests
	@bash $(VM)/run.sh $(if $(KVER),-k $(KVER)) \
		$(if $(value CMD),-m cmd -c $(cmd_arg),-m shell)

demo:
	@echo "make demo: installs what it lacks of 10 packages (gcc, QEMU, busybox:" \
		"about 250 MB), unpacks one Debian kernel and its headers into" \
		"/var/cache/wsem-guest-kernels (210 MB), builds wsem.ko and the CLI, boots a guest (about 2 minutes)"
	@bash $(VM)/deps.sh --demo
	@$(MAKE) -s --no-print-directory userlib
	@# (TESTS: the guest carries no test programs but the demo's own,
	@# and so none of what they need: Python, Go, sid's clients)
	@TESTS=demo_test.sh bash $(VM)/run.sh $(if $(KVER),-k $(KVER),-k 6.12) \
		-m cmd -c "$$(cat $(VM)/demo.sh)"

PREFIX ?= /usr/local
UDEVRULESDIR ?= /etc/udev/rules.d

install: all
ifneq ($(wildcard $(KDIR)/Makefile),)
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_PATH=$(DESTDIR) \
		modules_install
endif
	$(MAKE) -C userlib install PREFIX=$(PREFIX)
	install -D -m 0644 module/60-wsem.rules \
		$(DESTDIR)$(UDEVRULESDIR)/60-wsem.rules

# Debian packages (wsem-dkms, libwsem1, libwsem-dev, wsem, wsem-agent,
# python3-wsem, golang-wsem-dev) from a copy of
# the tree in build/deb, checked by lintian; the .debs land in build/deb.
deb:
	@bash $(VM)/deps.sh
	@bash debian/build.sh

lint:
	@bash $(VM)/lint.sh -s

deps:
	@bash $(VM)/deps.sh

bench-bin:
	@$(MAKE) -s --no-print-directory -C userlib libwsem.a
	@$(MAKE) -s --no-print-directory -C bench

bench: bench-bin
	@bash $(VM)/deps.sh
	@$(if $(BEFORE),WSEM_BENCH_BEFORE='$(BEFORE)') bash bench/run.sh vm $(KVER)

bench-host: bench-bin
	@bash bench/run.sh host

bench-jobserver: userlib
	@bash $(VM)/deps.sh
	@bash bench/jobserver.sh $(KVER)

bench-cluster:
	@bash $(VM)/deps.sh
	@$(MAKE) -s --no-print-directory userlib selftests
	@$(MAKE) -s --no-print-directory -C agent
	@$(MAKE) -s --no-print-directory -C bench/cluster
	@bash bench/cluster.sh $(KVER)

clean:
	-$(MAKE) -C userlib clean
	-$(MAKE) -C selftests clean
	-$(MAKE) -C examples clean
	-$(MAKE) -C bench clean
	-$(MAKE) -C bench/cluster clean
	rm -rf build .tmp_versions
	rm -f *.ko *.o .*.o *.mod *.mod.c modules.order Module.symvers \
		.*.cmd module/*.o module/.*.cmd \
		module/compat-probes.h

