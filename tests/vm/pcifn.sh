# SPDX-License-Identifier: GPL-2.0
# Mode pcifn (make pcifn): upstream mlx5_core on the emulated ConnectX PCI function
# (host/cxfn served over vfio-user, Documentation/pcifn.md): probe, let the health poll run,
# remove.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

pcifn_probe() {
	local d found=
	for d in /sys/bus/pci/devices/*; do
		echo "pcifn: ${d##*/} $(cat "$d/vendor"):$(cat "$d/device") class $(cat "$d/class")"
		[ "$(cat "$d/vendor")" = 0x15b3 ] && found=${d##*/}
	done
	if [ -n "$found" ]; then
		t_ok "a Mellanox PCI function is present ($found)"
	else
		t_fail "a Mellanox PCI function is present" "none on the PCI bus"
		return
	fi
	dmesg -n 8
	t_check "modprobe mlx5_core" modprobe mlx5_core
	sleep "${PCIFN_WAIT:-8}"
	echo "pcifn: auxiliary devices: $(ls /sys/bus/auxiliary/devices 2>/dev/null | tr '\n' ' ')"
	if [ -e /sys/bus/auxiliary/devices/mlx5_core.rdma.0 ]; then
		t_ok "mlx5_core.rdma.0 appears"
	else
		t_fail "mlx5_core.rdma.0 appears" "not in /sys/bus/auxiliary/devices"
	fi
	t_check "modprobe -r mlx5_core" modprobe -r mlx5_core
}

# Standalone: the VM mode `pcifn` (its suite is in suites.list).
[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode pcifn
