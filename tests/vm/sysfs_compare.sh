# SPDX-License-Identifier: GPL-2.0
# Compares the sysfs attributes of our device with the upstream rxe device's
# in the same VM (issue: core): the same attribute files, each value in the
# same format. Values differ between devices; formats must not.

# sysfs_snapshot DIR: "relative/path<TAB>value" for every readable attribute
# of the device directory and of its port 1, with the first entry of each
# indexed directory (gids, pkeys, gid_attrs/*).
sysfs_snapshot() {
	local d=$1 f
	for f in $(cd "$d" && find . -maxdepth 1 -type f; cd "$d" && find ports/1 -maxdepth 1 -type f; \
		cd "$d" && ls -d ports/1/gids/0 ports/1/pkeys/0 ports/1/gid_attrs/types/0 ports/1/gid_attrs/ndevs/0 2>/dev/null); do
		f=${f#./}
		case "$f" in uevent) continue ;; esac
		printf '%s\t%s\n' "$f" "$(cat "$d/$f" 2>&1 | head -n 1)"
	done | sort
}

# The format each attribute has in upstream sysfs.c; a value of a file
# not listed here is device-specific and only its presence is compared.
sysfs_format() {
	case "$1" in
	node_type) echo '^[0-9]+: [A-Z]+$' ;;
	node_guid | sys_image_guid) echo '^[0-9a-f]{4}(:[0-9a-f]{4}){3}$' ;;
	ports/1/state) echo '^[0-9]: [A-Z_]+$' ;;
	ports/1/phys_state) echo '^[0-9]: [A-Za-z]+$' ;;
	ports/1/lid | ports/1/sm_lid) echo '^0x[0-9a-f]+$' ;;
	ports/1/lid_mask_count | ports/1/sm_sl) echo '^[0-9]+$' ;;
	ports/1/cap_mask) echo '^0x[0-9a-f]{8}$' ;;
	ports/1/rate) echo '^[0-9.]+ Gb/sec( \([0-9]+X [A-Z0-9]+\))?$' ;;
	ports/1/link_layer) echo '^(InfiniBand|Ethernet)$' ;;
	ports/1/gids/0) echo '^[0-9a-f]{4}(:[0-9a-f]{4}){7}$' ;;
	ports/1/pkeys/0) echo '^0x[0-9a-f]{4}$' ;;
	ports/1/gid_attrs/types/0) echo '^(IB/RoCE v1|RoCE v2)$' ;;
	esac
}

# sysfs_compare OURS RXE: one case per attribute of the upstream device.
sysfs_compare() {
	local ours=$1 rxe=$2 f v ov re
	if [ ! -s "$ours" ] || [ ! -s "$rxe" ]; then
		t_fail "sysfs comparison with rxe0" "a snapshot is missing"
		return
	fi
	echo "+ sysfs of our device vs rxe0 (path | ours | rxe0)"
	while IFS="$(printf '\t')" read -r f v; do
		ov=$(awk -F '\t' -v f="$f" '$1 == f { print $2 }' "$ours")
		echo "    $f | $ov | $v"
		case "$f" in
		parent)
			# rdma_rxe's own attribute (its driver group), not the core's.
			t_skip "sysfs $f exists as on rxe0" "driver-specific attribute of rdma_rxe"
			continue ;;
		esac
		if ! grep -q "^$f	" "$ours"; then
			t_fail "sysfs $f exists as on rxe0"
			continue
		fi
		re=$(sysfs_format "$f")
		if [ -z "$re" ]; then
			t_ok "sysfs $f exists as on rxe0"
		elif printf '%s\n' "$v" | grep -Eq "$re" && printf '%s\n' "$ov" | grep -Eq "$re"; then
			t_ok "sysfs $f has rxe0's format"
		else
			t_fail "sysfs $f has rxe0's format" "ours '$ov', rxe0 '$v'"
		fi
	done <"$rxe"
	for f in $(cut -f1 "$ours"); do
		grep -q "^$f	" "$rxe" || echo "    (ours only: $f)"
	done
}
