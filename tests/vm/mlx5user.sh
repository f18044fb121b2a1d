# mlx5 user objects through raw uverbs write() commands with libmlx5's udata
# (tests/userspace/mlx5_user_raw.c), on both simulated functions. VM mode
# `mlx5user`.
. /rdma-rs/lib.sh
. /rdma-rs/ours.sh

kmemleak_clear
suite_begin vm_mlx5_user
load_ours sim=ib,eth
for n in 0 1; do
	uv=
	for d in /sys/class/infiniband_verbs/uverbs*; do
		[ "$(cat $d/ibdev)" = mlx5_$n ] && uv=$(basename $d)
	done
	/rdma-rs/mlx5_user_raw /dev/infiniband/$uv $FWSIM_DBG/mlx5_ib_rs.rdma.$n >/tmp/raw-$n.txt 2>&1
	rc=$?
	cat /tmp/raw-$n.txt
	grep '^R ok' /tmp/raw-$n.txt | sed 's/^R ok //' | while read -r l; do t_ok "mlx5_$n: $l"; done
	grep '^R fail' /tmp/raw-$n.txt | sed 's/^R fail //' | while read -r l; do t_fail "mlx5_$n: $l"; done
	if [ $rc = 0 ]; then t_ok "mlx5_user_raw on mlx5_$n exits 0"; else t_fail "mlx5_user_raw on mlx5_$n exits 0" "exit $rc"; fi
	cat $FWSIM_DBG/mlx5_ib_rs.rdma.$n/resources
done
unload_ours
suite_end
suite_begin vm_mlx5_user_leaks
kmemleak_check
suite_end
