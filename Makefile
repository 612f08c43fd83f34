# SPDX-License-Identifier: GPL-2.0
#
# make              the library, the CLI, the selftests, and wsem.ko when the
#                   headers of the running kernel ($(KDIR)) are installed
# make module       wsem.ko against KDIR (our warnings are errors)
# make check        lint, then every test in QEMU on each installed Debian
#                   kernel (6.1 and 6.12); ends with "N passed, N failed"
# make check-host   the same tests on this machine (root, module loading)
# make demo         the main job: a VM in which wsem gates real weighted
#                   jobs, one of them killed mid-way; prints a timeline
# make install      wsem.ko (modules_install, when KDIR exists), libwsem,
#                   wsem.h, wsem.pc, the CLI, man pages, the udev rule;
#                   DESTDIR and PREFIX (default /usr/local) are honoured
# make vm           a shell in a VM with wsem.ko loaded (KVER=... picks the
#                   kernel); with CMD='...' runs it there and returns its status
# make lint         W=1 -Werror, sparse, kernel-doc, checkpatch, uapi header
# make clean

KDIR ?= /lib/modules/$(shell uname -r)/build
KVER ?=
CMD ?=
VM := selftests/vm

# CMD verbatim ($ and all), single-quoted for the shell.
cmd_arg = '$(subst ','\'',$(value CMD))'

.PHONY: all module userlib selftests check check-host vm demo install lint deps clean

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

module:
	$(MAKE) -C $(KDIR) M=$(CURDIR) W=1 KCFLAGS=-Werror modules

check:
	@bash $(VM)/check.sh

check-host: userlib selftests module
	@bash $(VM)/host.sh

vm:
	@$(MAKE) -s --no-print-directory userlib selftests
	@bash $(VM)/run.sh $(if $(KVER),-k $(KVER)) \
		$(if $(value CMD),-m cmd -c $(cmd_arg),-m shell)

demo:
	@bash $(VM)/deps.sh
	@$(MAKE) -s --no-print-directory userlib selftests
	@bash $(VM)/run.sh $(if $(KVER),-k $(KVER)) -m cmd \
		-c "$$(cat $(VM)/demo.sh)"

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

lint:
	@bash $(VM)/lint.sh -s

deps:
	@bash $(VM)/deps.sh

clean:
	-$(MAKE) -C userlib clean
	-$(MAKE) -C selftests clean
	rm -rf build .tmp_versions
	rm -f *.ko *.o .*.o *.mod *.mod.c modules.order Module.symvers \
		.*.cmd module/*.o module/.*.cmd
