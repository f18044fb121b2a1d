# SPDX-License-Identifier: GPL-2.0
# End to end: Debian's rdma-core 44 (libibverbs + libmlx5, ibv_devices,
# ibv_devinfo, iproute2's rdma) against ib_core_rs + mlx5_ib_rs on the
# firmware simulator, compared field by field with what the simulator says
# about itself (debugfs identity and caps). Sourced by check.sh
# (RDMARS_SOURCED=1) or run as the VM mode `e2e`.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
. "${RDMARS_DIR:-/rdma-rs}/ours.sh"
. "${RDMARS_DIR:-/rdma-rs}/fwsim.sh"

# dv FILE KEY: the first value of "KEY:" in ibv_devinfo output (device part).
dv() { awk -v k="$2:" '$1 == k { print $2; exit }' "$1"; }
# pv FILE KEY: the same inside the port section.
pv() { sed -n '/port:/,$p' "$1" | awk -v k="$2:" '$1 == k { $1 = ""; sub(/^ /, ""); print; exit }'; }
# sim DEV FILE KEY: a value from the simulator's debugfs.
sim() { awk -v k="$3" '$1 == k { print $2; exit }' "$FWSIM_DBG/$1/$2"; }
# eq DESC GOT WANT
eq() { if [ "$2" = "$3" ]; then t_ok "$1 = $3"; else t_fail "$1" "got '$2', want '$3'"; fi; }
colon_guid() { echo "$1" | sed 's/\(....\)\(....\)\(....\)\(....\)/\1:\2:\3:\4/'; }
pow2() { echo $((1 << $1)); }

e2e_compare() {
	local fn=$1 ib=$2 ll=$3 out=/tmp/devinfo-$2 g want
	t_check "ibv_devinfo -v -d $ib succeeds" sh -c "ibv_devinfo -v -d $ib >$out 2>/tmp/devinfo-$ib.err"
	cat /tmp/devinfo-$ib.err
	t_check "ibv_devinfo -v -d $ib writes nothing to stderr" test ! -s /tmp/devinfo-$ib.err
	eq "$ib hca_id" "$(dv $out hca_id)" "$ib"
	eq "$ib transport" "$(dv $out transport)" "InfiniBand"
	eq "$ib fw_ver" "$(dv $out fw_ver)" "$(sim $fn identity fw)"
	eq "$ib node_guid" "$(dv $out node_guid)" "$(colon_guid $(sim $fn identity node_guid))"
	eq "$ib sys_image_guid" "$(dv $out sys_image_guid)" "$(colon_guid $(sim $fn identity sys_image_guid))"
	eq "$ib vendor_id" "$(dv $out vendor_id)" "$(sim $fn identity vendor_id)"
	eq "$ib vendor_part_id" "$(dv $out vendor_part_id)" "$(printf %d 0x$(sim $fn identity pci | cut -d: -f2))"
	eq "$ib hw_ver" "$(dv $out hw_ver)" "$(printf 0x%x $(sim $fn identity pci_revision))"
	eq "$ib board_id" "$(dv $out board_id)" "$(sim $fn identity board_id)"
	eq "$ib phys_port_cnt" "$(dv $out phys_port_cnt)" "$(sim $fn identity ports)"
	eq "$ib max_qp" "$(dv $out max_qp)" "$(pow2 $(sim $fn caps log_max_qp))"
	# mlx5_ib_calc_max_qp_wr(): 2^log_max_qp_sz send WQEBBs of 64 bytes over the largest
	# one-SGE WQE (sq_overhead() of an RC QP + a data segment, rounded up: 256 bytes).
	eq "$ib max_qp_wr" "$(dv $out max_qp_wr)" "$(($(pow2 $(sim $fn caps log_max_qp_sz)) * 64 / 256))"
	eq "$ib max_cq" "$(dv $out max_cq)" "$(pow2 $(sim $fn caps log_max_cq))"
	eq "$ib max_cqe" "$(dv $out max_cqe)" "$(($(pow2 $(sim $fn caps log_max_cq_sz)) - 1))"
	eq "$ib max_mr" "$(dv $out max_mr)" "$(pow2 $(sim $fn caps log_max_mkey))"
	eq "$ib max_pd" "$(dv $out max_pd)" "$(pow2 $(sim $fn caps log_max_pd))"
	eq "$ib max_mr_size" "$(dv $out max_mr_size)" "0xffffffffffffffff"
	eq "$ib port 1 state" "$(pv $out state)" "PORT_ACTIVE (4)"
	eq "$ib port 1 link_layer" "$(pv $out link_layer)" "$ll"
	if [ "$ll" = InfiniBand ]; then
		eq "$ib port 1 max_mtu" "$(pv $out max_mtu)" "4096 (5)"
		eq "$ib port 1 active_mtu" "$(pv $out active_mtu)" "4096 (5)"
		eq "$ib port 1 port_lid" "$(pv $out port_lid)" "$(awk '$1 == "port1" && $2 == "lid" { print $3 }' $FWSIM_DBG/$fn/caps)"
		# mlx5_get_gid_table_len(0) = 8 (the profile's gid_table_size encoding).
		eq "$ib port 1 gid_tbl_len" "$(pv $out gid_tbl_len)" "8"
		# The firmware's GID 0: fe80:: + the port GUID (node GUID + port number).
		g=$(sim $fn identity node_guid)
		want="fe80:0000:0000:0000:$(colon_guid $(printf %016x $((0x$g + 1))))"
	else
		# RoCE: PMTU max 10000 bytes and the NIC vport MTU 1522 (1500 + mlx5e's L2
		# overhead), through iboe_get_mtu() (minus 96 bytes of headers, rounded down).
		eq "$ib port 1 max_mtu" "$(pv $out max_mtu)" "4096 (5)"
		eq "$ib port 1 active_mtu" "$(pv $out active_mtu)" "1024 (3)"
		eq "$ib port 1 port_lid" "$(pv $out port_lid)" "0"
		eq "$ib port 1 gid_tbl_len" "$(pv $out gid_tbl_len)" "256"
		# GID 0 is what SET_ROCE_ADDRESS programmed into the simulator's table.
		want=$(awk '$1 == "port1" && $2 == "roce_gid0" { print $3 }' $FWSIM_DBG/$fn/caps)
		t_check "$fn RoCE address 0 programmed" test -n "$want" -a "$want" != "-"
		# The default GIDs: index 0 RoCE v1, index 1 RoCE v2 (QUERY_GID_ENTRY gid_type;
		# sysfs gid_attrs/types).
		eq "$ib port 1 GID[0] type" "$(sed -n 's/^[[:space:]]*GID\[ *0\]:.*, \(.*\)$/\1/p' $out)" "RoCE v1"
		eq "$ib port 1 GID[1] type" "$(sed -n 's/^[[:space:]]*GID\[ *1\]:.*, \(.*\)$/\1/p' $out)" "RoCE v2"
		eq "$ib sysfs gid_attrs/types/1" "$(cat /sys/class/infiniband/$ib/ports/1/gid_attrs/types/1)" "RoCE v2"
	fi
	g=$(sed -n 's/^[[:space:]]*GID\[ *0\]:[[:space:]]*\([0-9a-f:]*\).*/\1/p' $out)
	eq "$ib port 1 GID[0]" "$g" "$want"
}

# e2e_device_links AUXDEV IBDEV: the `device` links of IBDEV and of its uverbsN.
e2e_device_links() {
	local aux=$1 ib=$2 uv u
	eq "$ib: device link" "$(basename "$(readlink /sys/class/infiniband/$ib/device)")" "$aux"
	t_check "$ib is under its function's directory" test -d /sys/bus/auxiliary/devices/$aux/infiniband/$ib
	uv=
	for u in /sys/class/infiniband_verbs/uverbs*; do
		[ "$(cat $u/ibdev 2>/dev/null)" = "$ib" ] && uv=$(basename $u)
	done
	t_check "$ib has a uverbs node" test -n "$uv"
	eq "$uv ($ib): device link" "$(readlink -f /sys/class/infiniband_verbs/$uv/device)" \
		"$(readlink -f /sys/bus/auxiliary/devices/$aux)"
	t_check "$uv is under its function's directory" test -d /sys/bus/auxiliary/devices/$aux/infiniband_verbs/$uv
}

e2e_suite() {
	local d0=mlx5_ib_rs.rdma.0 d1=mlx5_ib_rs.rdma.1 drv
	load_ours sim=ib,eth
	cat $FWSIM_DBG/$d0/identity $FWSIM_DBG/$d0/caps $FWSIM_DBG/$d1/identity $FWSIM_DBG/$d1/caps
	ibv_devices >/tmp/ibv_devices.out 2>&1
	cat /tmp/ibv_devices.out
	t_check "ibv_devices lists mlx5_0 with the simulator's node GUID" \
		grep -q "mlx5_0[[:space:]]*$(sim $d0 identity node_guid)" /tmp/ibv_devices.out
	t_check "ibv_devices lists mlx5_1 with the simulator's node GUID" \
		grep -q "mlx5_1[[:space:]]*$(sim $d1 identity node_guid)" /tmp/ibv_devices.out
	t_check "ibv_devinfo (both devices) succeeds" sh -c "ibv_devinfo >/tmp/devinfo.out 2>&1"
	cat /tmp/devinfo.out
	t_check "ibv_devinfo shows mlx5_0 and mlx5_1" \
		sh -c "grep -q 'hca_id:.mlx5_0' /tmp/devinfo.out && grep -q 'hca_id:.mlx5_1' /tmp/devinfo.out"
	e2e_compare $d0 mlx5_0 InfiniBand
	e2e_compare $d1 mlx5_1 Ethernet
	cat /tmp/devinfo-mlx5_1
	# libmlx5 was bound by driver id over netlink: the nldev answer names the mlx5 driver.
	rdma dev >/tmp/rdma-dev.out 2>&1
	cat /tmp/rdma-dev.out
	t_check "rdma dev shows mlx5_0" grep -q "^[0-9]*: mlx5_0: node_type ca fw 28.43.1014" /tmp/rdma-dev.out
	t_check "rdma dev shows mlx5_1" grep -q "^[0-9]*: mlx5_1: node_type ca fw 22.43.1014" /tmp/rdma-dev.out
	# iproute2 prints no driver name: the function is bound to mlx5_ib_rs, which registered it, and
	# libmlx5 (not another provider) served ibv_devinfo: every ioctl header carries
	# RDMA_DRIVER_MLX5 and GET_CONTEXT carried mlx5's udata, which the uverbs layer
	# refuses for any other driver id.
	for drv in "$d0 mlx5_0" "$d1 mlx5_1"; do
		set -- $drv
		case "$(fwsim_driver_of $1)" in
		mlx5_ib_rs*) t_ok "$1 is bound to mlx5_ib_rs" ;;
		*) t_fail "$1 is bound to mlx5_ib_rs" "driver '$(fwsim_driver_of $1)'" ;;
		esac
		t_check "$1 registered $2" sh -c "dmesg | grep -q '$1: .*registered as $2\$'"
		# upstream: ib_dev.dev.parent is the function's device (the PCI function; here its
		# auxiliary device), and uverbsN has the same parent (ib_uverbs_add_one()).
		e2e_device_links $1 $2
	done
	# Every context was closed: the transport domains and nothing else went back.
	t_check "$d0 holds only the kernel PD and UAR after ibv_devinfo" fwsim_resources_probed $d0
	t_check "$d1 holds only the kernel PD and UAR after ibv_devinfo" fwsim_resources_probed $d1
	unload_ours
	t_check "nothing registered after rmmod" test -z "$(ls /sys/class/infiniband/ 2>/dev/null)"
	t_check "no uverbs node after rmmod" test -z "$(ls /dev/infiniband/ 2>/dev/null)"
	t_check "debugfs gone after rmmod" test ! -e $FWSIM_DBG
}

# Standalone: the VM mode `e2e` (its suites are in suites.list).
[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode e2e
