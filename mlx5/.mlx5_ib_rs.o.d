mlx5/.mlx5_ib_rs.o.d: /var/cache/rdma-rs/linux-7.3/.clippy.toml mlx5/mlx5_ib_rs.rs mlx5/prm.rs mlx5/prm/layout.rs mlx5/prm/cmd.rs mlx5/prm/consts.rs mlx5/prm/ctx.rs mlx5/prm/opcode.rs mlx5/prm/status.rs mlx5/fwsim/fwsim.rs mlx5/fwsim/fault.rs mlx5/fwsim/objects.rs mlx5/fwsim/profile.rs mlx5/fwsim/qp.rs mlx5/fwsim/query.rs mlx5/fwsim/spec.rs mlx5/fwsim/syndrome.rs mlx5/fwsim/table.rs mlx5/../rust/aux_parent.rs mlx5/../rust/fwsim_param.rs mlx5/../rust/mlx5_core.rs mlx5/attrs.rs mlx5/cmd.rs mlx5/cmd/cq.rs mlx5/cmd/qp.rs mlx5/cmd/query.rs mlx5/cmd/reg.rs mlx5/cmd/res.rs mlx5/cmd/tests.rs mlx5/corehw.rs mlx5/dev.rs mlx5/hw.rs mlx5/probe.rs mlx5/simdev.rs mlx5/simdev/debugfs.rs mlx5/stages.rs Cargo.toml /var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libcore.rmeta /var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libkernel.rmeta /var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libffi.rmeta /var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libcompiler_builtins.rmeta /var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libpin_init.rmeta /var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libpin_init_internal.so /var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libmacros.so /var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libbuild_error.rmeta /var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libzerocopy.rmeta /var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libbindings.rmeta /var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libzerocopy_derive.so /var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libuapi.rmeta ./core/libib_core_rs.rmeta

mlx5/mlx5_ib_rs.o: /var/cache/rdma-rs/linux-7.3/.clippy.toml mlx5/mlx5_ib_rs.rs mlx5/prm.rs mlx5/prm/layout.rs mlx5/prm/cmd.rs mlx5/prm/consts.rs mlx5/prm/ctx.rs mlx5/prm/opcode.rs mlx5/prm/status.rs mlx5/fwsim/fwsim.rs mlx5/fwsim/fault.rs mlx5/fwsim/objects.rs mlx5/fwsim/profile.rs mlx5/fwsim/qp.rs mlx5/fwsim/query.rs mlx5/fwsim/spec.rs mlx5/fwsim/syndrome.rs mlx5/fwsim/table.rs mlx5/../rust/aux_parent.rs mlx5/../rust/fwsim_param.rs mlx5/../rust/mlx5_core.rs mlx5/attrs.rs mlx5/cmd.rs mlx5/cmd/cq.rs mlx5/cmd/qp.rs mlx5/cmd/query.rs mlx5/cmd/reg.rs mlx5/cmd/res.rs mlx5/cmd/tests.rs mlx5/corehw.rs mlx5/dev.rs mlx5/hw.rs mlx5/probe.rs mlx5/simdev.rs mlx5/simdev/debugfs.rs mlx5/stages.rs Cargo.toml /var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libcore.rmeta /var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libkernel.rmeta /var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libffi.rmeta /var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libcompiler_builtins.rmeta /var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libpin_init.rmeta /var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libpin_init_internal.so /var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libmacros.so /var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libbuild_error.rmeta /var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libzerocopy.rmeta /var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libbindings.rmeta /var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libzerocopy_derive.so /var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libuapi.rmeta ./core/libib_core_rs.rmeta

/var/cache/rdma-rs/linux-7.3/.clippy.toml:
mlx5/mlx5_ib_rs.rs:
mlx5/prm.rs:
mlx5/prm/layout.rs:
mlx5/prm/cmd.rs:
mlx5/prm/consts.rs:
mlx5/prm/ctx.rs:
mlx5/prm/opcode.rs:
mlx5/prm/status.rs:
mlx5/fwsim/fwsim.rs:
mlx5/fwsim/fault.rs:
mlx5/fwsim/objects.rs:
mlx5/fwsim/profile.rs:
mlx5/fwsim/qp.rs:
mlx5/fwsim/query.rs:
mlx5/fwsim/spec.rs:
mlx5/fwsim/syndrome.rs:
mlx5/fwsim/table.rs:
mlx5/../rust/aux_parent.rs:
mlx5/../rust/fwsim_param.rs:
mlx5/../rust/mlx5_core.rs:
mlx5/attrs.rs:
mlx5/cmd.rs:
mlx5/cmd/cq.rs:
mlx5/cmd/qp.rs:
mlx5/cmd/query.rs:
mlx5/cmd/reg.rs:
mlx5/cmd/res.rs:
mlx5/cmd/tests.rs:
mlx5/corehw.rs:
mlx5/dev.rs:
mlx5/hw.rs:
mlx5/probe.rs:
mlx5/simdev.rs:
mlx5/simdev/debugfs.rs:
mlx5/stages.rs:
Cargo.toml:
/var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libcore.rmeta:
/var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libkernel.rmeta:
/var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libffi.rmeta:
/var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libcompiler_builtins.rmeta:
/var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libpin_init.rmeta:
/var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libpin_init_internal.so:
/var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libmacros.so:
/var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libbuild_error.rmeta:
/var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libzerocopy.rmeta:
/var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libbindings.rmeta:
/var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libzerocopy_derive.so:
/var/cache/rdma-rs/kbuild-7.3.4-fbca377f15f3/rust/libuapi.rmeta:
./core/libib_core_rs.rmeta:

# env-dep:CLIPPY_ARGS
# env-dep:CLIPPY_CONF_DIR=/var/cache/rdma-rs/linux-7.3
