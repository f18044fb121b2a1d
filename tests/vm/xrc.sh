# SPDX-License-Identifier: GPL-2.0
# XRC (suite vm_xrc of suites.list, modes check and traffic): Debian's
# unmodified ibv_xsrq_pingpong (rdma-core 44) through libmlx5 on the
# simulator, and the project's XRC test (tests/userspace/xrc_test.c).
#  - ibv_xsrq_pingpong: each process opens the XRC domain of /tmp/xrc_domain
#    (ibv_open_xrcd with O_CREAT), an XRC SRQ in it, an XRC target QP (recv)
#    and an XRC initiator QP (send) per client; sends name the peer's XRC SRQ
#    number. Both ends on one function share the domain (one inode, one
#    device); between two functions each has its own. IB and RoCE.
#  - xrc_test: the usecnt/EBUSY rules, O_CREAT/O_EXCL, OPEN_QP, sharing with a
#    child process and an XRC SRQ of another domain (checks R, facts C).
# Then the simulator's tables (XRC domains and SRQs included) and rdma res are
# back to baseline.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

xrc_pingpongs() {
	rm -f /tmp/xrc_domain
	tr_pair "ibv_xsrq_pingpong on mlx5_0 (IB, one shared XRC domain)" ibv_xsrq_pingpong \
		"-d mlx5_0 -n 20" "-d mlx5_0 -n 20" '^success$'
	tr_pair "ibv_xsrq_pingpong on mlx5_2 (RoCE)" ibv_xsrq_pingpong \
		"-d mlx5_2 -g $ROCE_GID -n 20" "-d mlx5_2 -g $ROCE_GID -n 20" '^success$'
	tr_pair "ibv_xsrq_pingpong mlx5_0 <-> mlx5_1 (IB fabric, a domain each)" ibv_xsrq_pingpong \
		"-d mlx5_0 -n 10" "-d mlx5_1 -n 10" '^success$'
}

xrc_suite() {
	fabric_take traffic tr_load
	t_check "ibv_devinfo -v: mlx5_0 claims XRC" sh -c 'ibv_devinfo -v -d mlx5_0 | tee /tmp/devinfo-xrc | grep -qw XRC'
	grep -w XRC /tmp/devinfo-xrc | sed 's/^/    devinfo| /'
	xrc_pingpongs
	if [ -x /rdma-rs/xrc_test ]; then
		t_import "xrc_test mlx5_0 (IB)" /rdma-rs/xrc_test -d mlx5_0
		t_import "xrc_test mlx5_2 (RoCE)" /rdma-rs/xrc_test -d mlx5_2 -g $ROCE_GID
	fi
	tr_baseline "the XRC tests"
	fabric_give traffic unload_ours
}


