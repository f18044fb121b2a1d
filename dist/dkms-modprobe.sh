#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# DKMS's POST_INSTALL and POST_REMOVE hooks (dkms.conf), run from the source directory:
#   dist/dkms-modprobe.sh install   installs the modprobe configuration as `make install`
#                                   does (/etc/modprobe.d/rdma-rs.conf)
#   dist/dkms-modprobe.sh remove    removes it once no kernel has ib_core_rs any more
# RDMARS_ROOT: a staging root instead of / (tools/install-test.sh).
set -eu
root=${RDMARS_ROOT:-}
conf="$root/etc/modprobe.d/rdma-rs.conf"
case ${1:-} in
install)
	install -D -m 0644 "$(dirname "$0")/rdma-rs-modprobe.conf" "$conf"
	echo "rdma-rs: installed $conf (upstream ib_core and mlx5_ib no longer load);"
	echo "rdma-rs: regenerate the initramfs if it carries mlx5_core (update-initramfs -u / dracut -f)"
	;;
remove)
	if [ -n "$(find "$root/lib/modules" -name 'ib_core_rs.ko*' 2>/dev/null)" ]; then
		echo "rdma-rs: kept $conf (another kernel still has ib_core_rs)"
	elif [ -e "$conf" ]; then
		rm -f "$conf"
		echo "rdma-rs: removed $conf"
	fi
	;;
*)
	echo "usage: dist/dkms-modprobe.sh install|remove" >&2
	exit 1
	;;
esac
