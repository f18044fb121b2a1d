#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Mode pcifn (make pcifn): upstream mlx5_core on the emulated ConnectX PCI function
# (host/cxfn served over vfio-user, Documentation/pcifn.md): probe, let the health poll run,
# remove. The host side judges the log.
echo "pcifn: PCI functions:"
for d in /sys/bus/pci/devices/*; do
	echo "pcifn:   ${d##*/} $(cat "$d/vendor"):$(cat "$d/device") class $(cat "$d/class")"
done
dmesg -n 8
echo "pcifn: modprobe mlx5_core"
modprobe mlx5_core
echo "pcifn: modprobe status $?"
sleep "${PCIFN_WAIT:-8}"
echo "pcifn: auxiliary devices: $(ls /sys/bus/auxiliary/devices 2>/dev/null | tr '\n' ' ')"
echo "pcifn: modprobe -r mlx5_core"
modprobe -r mlx5_core
echo "pcifn: modprobe -r status $?"
echo "pcifn: done"
