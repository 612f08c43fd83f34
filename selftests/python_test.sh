#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The Python binding (bindings/python) with Debian's python3, in the test
# VM: python/wsem_test.py prints the TAP (python_pip_test.sh has pip
# install).  mkinitramfs.sh puts python3, its standard library, pip,
# setuptools and wheel, the binding's source (/usr/src/wsem/bindings/python)
# and python/ into the guest when either test is in the run
# (selftests/vm/python.sh).

if [ ! -c /dev/wsem ]; then
	echo "1..0 # SKIP no /dev/wsem: the wsem module is not loaded"
	exit 4
fi
if [ ! -x /usr/bin/python3 ]; then
	echo "Bail out! no /usr/bin/python3 in the guest"
	exit 1
fi
exec /usr/bin/python3 "$(dirname "$0")/python/wsem_test.py" "$@"
