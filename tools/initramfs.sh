#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Builds the test VM's initramfs: busybox, our modules, the upstream RDMA
# modules (the peer), rdma-core from the host's Debian packages with the
# shared libraries they need, and the project's VM test scripts.
#   tools/initramfs.sh KBUILD OUTPUT.cpio.gz
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tools/lib.sh"
kb=$1
out=$2
kver=$(cat "$kb/include/config/kernel.release")
st="$out.d"
rm -rf "$st"
mkdir -p "$st"/{bin,sbin,usr/bin,usr/sbin,lib/x86_64-linux-gnu,lib64,usr/lib/x86_64-linux-gnu/libibverbs,etc/libibverbs.d,proc,sys,dev,tmp,run,root,lib/modules/rdma-rs,rdma-rs}

# A file and, for an ELF, every library it loads (same paths as on the host).
copy() {
	local f
	for f in "$@"; do
		mkdir -p "$st$(dirname "$f")"
		cp -L "$f" "$st$f"
		ldd "$f" 2>/dev/null | awk '/=> \// { print $3 } /^\t\/lib64/ { print $1 }' | while read -r lib; do
			if [ ! -e "$st$lib" ]; then
				mkdir -p "$st$(dirname "$lib")"
				cp -L "$lib" "$st$lib"
			fi
		done
	done
}

cp /bin/busybox "$st/bin/busybox"
for a in $(/bin/busybox --list); do
	[ -e "$st/bin/$a" ] || ln -s busybox "$st/bin/$a"
done

# rdma-core 44 (bookworm) and the tools the tests drive.
copy /usr/bin/strace /usr/bin/ibv_asyncwatch /usr/bin/ibv_devinfo /usr/bin/ibv_devices /usr/bin/ibv_rc_pingpong /usr/bin/ibv_ud_pingpong \
	/usr/bin/ibv_uc_pingpong /usr/bin/ibv_srq_pingpong /usr/bin/ibv_xsrq_pingpong \
	/usr/bin/rdma /usr/sbin/ip /usr/bin/kmod
# perftest 4.5 (bookworm): the data-path suites and make bench-traffic.
for b in ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat; do
	copy /usr/bin/$b
done
# rdmacm-utils 44 (bookworm): the librdmacm programs of the connection-manager suites.
for b in rping ucmatose udaddy mckey rdma_server rdma_client; do
	copy /usr/bin/$b
done
# glibc dlopens libgcc_s for pthread_exit()/pthread_cancel() (rping's threads end with them).
copy /lib/x86_64-linux-gnu/libgcc_s.so.1
# infiniband-diags 44 and opensm 3.3 (bookworm), over libibumad: the umad suite.
for b in ibstat smpquery perfquery sminfo ibaddr ibnetdiscover saquery ibping opensm; do
	copy /usr/sbin/$b
done
# ibstatus is a shell script over sysfs (no ldd).
cp /usr/sbin/ibstatus "$st/usr/sbin/ibstatus"
# perf (the host's) for the benchmark modes: where the time goes, in the VM.
[ -z "${RDMARS_INITRD_PERF:-}" ] || copy /usr/bin/perf
for p in mlx5 rxe; do
	copy "/usr/lib/x86_64-linux-gnu/libibverbs/lib$p-rdmav34.so"
	cp "/etc/libibverbs.d/$p.driver" "$st/etc/libibverbs.d/"
done
# libmlx5.so.1 (mlx5dv_*, tests/userspace/devx_test.c) is the mlx5 provider itself: a link to
# the same file, so that the program and libibverbs load one copy of it.
ln -sf libibverbs/libmlx5-rdmav34.so "$st/usr/lib/x86_64-linux-gnu/libmlx5.so.1"
# UCX 1.13 (bookworm, tests/vm/ucx.sh): the tools and the transport modules libucs dlopens
# from <its directory>/ucx.
copy /usr/bin/ucx_info /usr/bin/ucx_perftest /usr/lib/x86_64-linux-gnu/ucx/libuct_ib.so.0
ln -sfn ../../usr/lib/x86_64-linux-gnu/ucx "$st/lib/x86_64-linux-gnu/ucx"
# libuct_ib needs libmlx5.so.1: the provider's file again (one copy loaded, see below).
ln -sf ../../usr/lib/x86_64-linux-gnu/libibverbs/libmlx5-rdmav34.so "$st/lib/x86_64-linux-gnu/libmlx5.so.1"
[ ! -d /usr/share/ucx ] || { mkdir -p "$st/usr/share"; cp -r /usr/share/ucx "$st/usr/share/"; }
for t in insmod rmmod modprobe lsmod modinfo depmod; do ln -sf ../bin/kmod "$st/usr/sbin/$t"; done
printf '/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n' >"$st/etc/ld.so.conf"
ldconfig -r "$st" 2>/dev/null || true

# Our modules: built in the tree, or (RDMARS_MODDIR, the bench targets) in a
# directory of their own for another kernel.
for m in "${RDMARS_MODDIR:-$here}"/*.ko; do cp "$m" "$st/lib/modules/rdma-rs/"; done
# RDMARS_MODDIR_B: a second build of them (another commit, the same kernel) in
# /lib/modules/rdma-rs-b, for before/after figures taken alternately in one VM
# (RDMARS_MODS=/lib/modules/rdma-rs-b in a suite loads them).
if [ -n "${RDMARS_MODDIR_B:-}" ]; then
	mkdir -p "$st/lib/modules/rdma-rs-b"
	for m in "$RDMARS_MODDIR_B"/*.ko; do cp "$m" "$st/lib/modules/rdma-rs-b/"; done
fi

# Upstream modules the peer and the link check need, with their dependencies.
mroot="$kb/modroot/lib/modules/$kver"
mkdir -p "$st/lib/modules/$kver"
cp "$mroot"/modules.* "$st/lib/modules/$kver/"
want="rdma_rxe ib_uverbs ib_umad ib_core mlx5_ib mlx5_core dummy veth 8021q rdma_ucm"
(cd "$mroot" && for m in $want; do
	f=$(modprobe -d "$kb/modroot" -S "$kver" --show-depends "$m" 2>/dev/null | awk '$1 == "insmod" { print $2 }')
	echo "$f"
done) | sort -u | while read -r f; do
	[ -n "$f" ] || continue
	rel=${f#*/lib/modules/$kver/}
	mkdir -p "$st/lib/modules/$kver/$(dirname "$rel")"
	cp "$f" "$st/lib/modules/$kver/$rel"
done

# The VM's init and test scripts.
cp "$here/tests/vm/init" "$st/init"
chmod +x "$st/init"
cp "$here"/tests/vm/*.sh "$here/tests/vm/suites.list" "$st/rdma-rs/"
# The interactive shell (make vm) gets the same tool wrappers and suite
# functions as the tests (`run_suites check` runs them all).
printf 'export PS1="rdma-rs-vm# "\n. /rdma-rs/lib.sh\nsource_all\n' >"$st/etc/profile"
for b in "$here"/out/vm-bin/*; do [ -e "$b" ] && cp "$b" "$st/rdma-rs/"; done

(cd "$st" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$out"
