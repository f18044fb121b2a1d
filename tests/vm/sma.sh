# SPDX-License-Identifier: GPL-2.0
# The device model's subnet management agent and the embedded subnet manager (suite vm_sma
# of suites.list, modes check2 and sma; mlx5/fwsim/sma.rs, sm.rs):
#  - sim=ib,ib with the default sm=1: the embedded SM swept both functions' ports through
#    their SMAs: ACTIVE, LIDs 0x100 + serial * 2 (0x102, 0x104), SM LID 1, SubnetTimeOut 18,
#    in sysfs (ports/1/state, lid, sm_lid, sm_sl) and ibv_devinfo (vm_pingpong's
#    ibv_rc_pingpong and ibv_ud_pingpong between the two functions use those LIDs);
#    the fabric's switch (debugfs mlx5_fwsim/<fn>/switch, fwsim/switch.rs) holds LID 1, its
#    ports 0-2 ACTIVE, and forwarding entries 0x102 -> port 1, 0x104 -> port 2;
#  - sm=0 (with mad_qps=1, the fabric vm_mad_opensm sweeps): no SM: both ports stay INIT (sysfs "2: INIT", ibv_devinfo PORT_INIT) with LID 0
#    and SM LID 0 until a host SM sweeps them; the switch has no LID, its linked ports are
#    INIT and its forwarding table is empty.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

# sma_eq DESC GOT WANT
sma_eq() {
	if [ "$2" = "$3" ]; then t_ok "$1"; else t_fail "$1" "got '$2', want '$3'"; fi
}

# sma_devinfo DEV FIELD: FIELD of ibv_devinfo -d DEV (the first port's).
sma_devinfo() {
	ibv_devinfo -d "$1" 2>/dev/null | awk -v f="$2" '
		{ k = $1; sub(/:$/, "", k) }
		k == f { $1 = ""; sub(/^ /, ""); print; exit }'
}

# sma_port DEV STATE LID SM_LID DEVINFO_STATE
sma_port() {
	local p=/sys/class/infiniband/$1/ports/1
	sma_eq "$1 sysfs ports/1/state" "$(cat $p/state)" "$2"
	sma_eq "$1 sysfs ports/1/phys_state" "$(cat $p/phys_state)" "5: LinkUp"
	sma_eq "$1 sysfs ports/1/lid" "$(cat $p/lid)" "$3"
	sma_eq "$1 sysfs ports/1/sm_lid" "$(cat $p/sm_lid)" "$4"
	sma_eq "$1 sysfs ports/1/sm_sl" "$(cat $p/sm_sl)" "0"
	sma_eq "$1 ibv_devinfo state" "$(sma_devinfo $1 state)" "$5"
	sma_eq "$1 ibv_devinfo port_lid" "$(sma_devinfo $1 port_lid)" "$(printf %d $3)"
	sma_eq "$1 ibv_devinfo sm_lid" "$(sma_devinfo $1 sm_lid)" "$(printf %d $4)"
}

# sma_switch WANT: the switch lines of function 0's debugfs (mlx5_fwsim/<fn>/switch).
sma_switch() {
	local f=/sys/kernel/debug/mlx5_fwsim/mlx5_ib_rs.rdma.0/switch
	sma_eq "switch (debugfs $f)" "$(tr '\n' ' ' < $f 2>/dev/null)" "$1"
}

sma_suite() {
	load_ours sim=ib,ib
	sma_port mlx5_0 "4: ACTIVE" 0x102 0x1 "PORT_ACTIVE (4)"
	sma_port mlx5_1 "4: ACTIVE" 0x104 0x1 "PORT_ACTIVE (4)"
	sma_eq "mlx5_0 ibv_devinfo subnet_timeout" "$(ibv_devinfo -v -d mlx5_0 | awk '$1 == "subnet_timeout:" { print $2; exit }')" "18"
	sma_switch "lid 1 sm_lid 1 link 1 port 0 4 port 1 4 port 2 4 lft_top 260 lft 0x102 1 lft 0x104 2 "
	unload_ours
	# The IPoIB interfaces too (down): vm_cm_ib_opensm's IP part takes them.
	RDMARS_CORE_PARAMS=ipoib=1 load_ours sim=ib,ib sm=0 mad_qps=1
	sma_port mlx5_0 "2: INIT" 0x0 0x0 "PORT_INIT (2)"
	sma_port mlx5_1 "2: INIT" 0x0 0x0 "PORT_INIT (2)"
	sma_switch "lid 0 sm_lid 0 link 1 port 0 2 port 1 2 port 2 2 lft_top 0 "
	# The unswept fabric is the one opensm sweeps in vm_mad_opensm (madwire.sh) when that
	# suite comes next (make check's check2).
	fabric_give sm0 unload_ours
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode sma
