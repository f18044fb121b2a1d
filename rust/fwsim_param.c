// SPDX-License-Identifier: GPL-2.0
/*
 * The `sim=`, `uplink=` and `uar_emulate=` module parameters of mlx5_ib_rs. The first two are
 * string (charp) parameters, which
 * the Rust `module!` macro cannot declare in Linux 7.3 (integers and bool
 * only). KBUILD_MODNAME is the module's name for every object of a composite
 * module, so this is `mlx5_ib_rs.sim` / `insmod mlx5_ib_rs.ko sim=ib,eth`. The third is a
 * bool writable through sysfs at run time, which `module!` parameters are not.
 */
#include <linux/moduleparam.h>
#include <linux/module.h>

static char *sim = "";
module_param(sim, charp, 0444);
MODULE_PARM_DESC(sim, "simulated ConnectX functions to create, comma-separated: ib (ConnectX-7, InfiniBand), eth (ConnectX-6 Dx, RoCE), ib:cx7, eth:cx7, eth:cx6dx; default none");

const char *rdma_rs_fwsim_param(void);
const char *rdma_rs_fwsim_param(void)
{
	return sim;
}

static char *uplink = "";
module_param(uplink, charp, 0444);
MODULE_PARM_DESC(uplink, "a network interface (e.g. eth0) attached to the first simulated Ethernet fabric's segment as its uplink; default none");

const char *rdma_rs_uplink_param(void);
const char *rdma_rs_uplink_param(void)
{
	return uplink;
}

static bool uar_emulate = true;
module_param(uar_emulate, bool, 0644);
MODULE_PARM_DESC(uar_emulate, "the simulated functions' UAR stores emulated in the page-fault handler, the UAR pages never installed (1, default); 0: each faulting store installs the page and the page is re-armed afterwards; read at every fault, so writable at run time");

bool rdma_rs_uar_emulate(void);
bool rdma_rs_uar_emulate(void)
{
	return READ_ONCE(uar_emulate);
}
