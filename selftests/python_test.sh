#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The Python binding (bindings/python) with Debian's python3, in the test
# VM: python/wsem_test.py prints the TAP (python_pip_test.sh has pip
# install).  mkinitramfs.sh puts python3, its standard library, pip,
# setuptools and wheel, the binding's source (/usr/src/wsem/bindings/python)
# and python/ into the guest when either test is in the run
# (selftests/vm/python.sh), and pool_replay for t_pool_replayed (pool=N
# under pool_test's replay, selftests/pool_replay.c).

# shellcheck source-path=SCRIPTDIR source=util.sh
. "$(dirname "$0")/util.sh"
need_module_and_python3
exec /usr/bin/python3 "$(dirname "$0")/python/wsem_test.py" "$@"
