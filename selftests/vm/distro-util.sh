# SPDX-License-Identifier: GPL-2.0
# What distro-lane.sh and distro-podman.sh, the guest side of make
# check-distro, both use; sourced from the 9p share.

# up: seconds since the guest booted.
up() { cut -d' ' -f1 /proc/uptime; }

# until_true SECONDS CMD...: poll CMD every 0.1 s for at most SECONDS.
until_true() {
	local end
	end=$(awk -v u="$(up)" -v s="$1" 'BEGIN { print u + s }')
	shift
	until "$@"; do
		awk -v u="$(up)" -v e="$end" 'BEGIN { exit !(u > e) }' &&
			return 1
		sleep 0.1
	done
}
