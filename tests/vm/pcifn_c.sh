# SPDX-License-Identifier: GPL-2.0
# Mode pcifn_c (make pcifn-compare, Documentation/pcifn.md "Upstream mlx5_ib on the
# function, compared with ours"): the same emulated ConnectX function as mode pcifn, under
# the upstream C stack: mlx5_core, ib_core, ib_uverbs, ib_umad and mlx5_ib of the test kernel.
#  - vm_pcifn_c: upstream mlx5_ib binds mlx5_core.rdma.0 and registers mlx5_0;
#    ibv_devinfo, the libibverbs workload and traffic run on it; the comparison dump
#    (pcifn_cmp.sh) is printed for tools/pcifn-compare.sh; everything is unloaded and the
#    kernel log has no failed command, warning or oops.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

pcifn_c_suite() {
	local n0
	dmesg -n 8
	n0=$(dmesg | wc -l)
	t_check "modprobe mlx5_core" modprobe mlx5_core
	t_check "modprobe ib_uverbs ib_umad mlx5_ib (upstream)" modprobe -a ib_uverbs ib_umad mlx5_ib
	sleep 1
	echo "pcifn: mlx5_core.rdma.0 driver: $(fwsim_driver_of mlx5_core.rdma.0)"
	t_check "upstream mlx5_ib is bound to mlx5_core.rdma.0" \
		test "$(fwsim_driver_of mlx5_core.rdma.0)" = mlx5_ib.rdma
	t_check "mlx5_0 is registered" test -e /sys/class/infiniband/mlx5_0
	t_check "mlx5_0's parent is the PCI function" \
		sh -c 'readlink /sys/class/infiniband/mlx5_0/device | grep -q 0000:00:02.0'
	if [ -e /sys/class/infiniband/mlx5_0 ]; then
		pcifn_cmp_dump
		t_check "libmlx5 workload on upstream mlx5_0 passes" grep -q '^exit 0' /tmp/cmp-wl.out
		# Upstream's own kernel objects (MAD layer, device resources, UMR) stay listed.
		t_check "rdma res: no user object left" sh -c "! rdma res show pd | grep -q 'pid '"
	fi
	t_check "modprobe -r mlx5_ib ib_umad ib_uverbs ib_core" \
		modprobe -r mlx5_ib ib_umad ib_uverbs ib_core
	t_check "modprobe -r mlx5_core" modprobe -r mlx5_core
	# No failed command: ib_core's ClassPortInfo query at registration (get_counter_table())
	# goes through MAD_IFC to the model's PMA (fwsim/pma.rs).
	pcifn_kmsg_since "$n0" >/tmp/pcifn-c.kmsg
	grep -E 'mlx5_ib|mlx5_core|infiniband' /tmp/pcifn-c.kmsg | sed 's/^/    kmsg| /' | head -n 60
	pcifn_no_bad_lines /tmp/pcifn-c.kmsg "upstream mlx5_ib on the function"
}

# vm_pcifn_c_ours: the same boot, after upstream is gone: mlx5_core probes the function again
# and our stack registers mlx5_0; the dump is tagged `cmpours` (tools/pcifn-compare.sh
# compares it with upstream's when given the same log twice). The separate-boot comparison
# is mode pcifn's dump (make pcifn-compare); this one costs one boot less.
pcifn_c_ours_suite() {
	local n0
	n0=$(dmesg | wc -l)
	# QP0 and QP1 on the wire, as upstream's MAD layer has them (the dump's fabric part).
	load_ours mad_qps=1
	sleep 1
	t_check "mlx5_ib_rs is bound to mlx5_core.rdma.0" \
		test "$(fwsim_driver_of mlx5_core.rdma.0)" = mlx5_ib_rs.mlx5_ib_rs
	if [ -e /sys/class/infiniband/mlx5_0 ]; then
		PCIFN_CMP_TAG=cmpours pcifn_cmp_dump
		t_check "libmlx5 workload on our mlx5_0 passes" grep -q '^exit 0' /tmp/cmp-wl.out
	fi
	unload_ours
	pcifn_kmsg_since "$n0" >/tmp/pcifn-c-ours.kmsg
	pcifn_no_bad_lines /tmp/pcifn-c-ours.kmsg "our stack after upstream on the function"
}

# Standalone: the VM mode `pcifn_c` (its suites are in suites.list).
[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode pcifn_c
