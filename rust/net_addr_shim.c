// SPDX-License-Identifier: GPL-2.0
/*
 * C shim for rust/net_addr.rs: what rdma_cm needs of the IP stack beyond a neighbour (upstream
 * drivers/infiniband/core/addr.c and cma.c): the device owning an address
 * (rdma_translate_ip()), the source address and out device a route picks (addr4_resolve(),
 * addr6_resolve(), rdma_set_src_addr_rcu()), the local port range, a random number and the
 * CAP_NET_BIND_SERVICE check of a port below 1024 (cma_use_port()), and the IGMP membership of
 * a RoCE multicast join (cma_igmp_send()). The routing calls are
 * inline functions or take structs the kernel crate's bindings lack.
 */

#include <linux/capability.h>
#include <linux/igmp.h>
#include <linux/inetdevice.h>
#include <linux/netdevice.h>
#include <linux/random.h>
#include <net/addrconf.h>
#include <net/ip.h>
#include <net/ip6_route.h>
#include <net/route.h>

struct net_device *rdma_rs_net_ip_dev_find(bool v4, const u8 *ip);
struct net_device *rdma_rs_net_route_src(bool v4, u8 *sip, const u8 *dip, int oif, int *err);
void rdma_rs_net_local_port_range(int *low, int *high);
u32 rdma_rs_random_u32(void);
bool rdma_rs_capable_net_bind_service(void);
int rdma_rs_net_igmp(int ifindex, const u8 *addr, bool join);

/* The device of init_net owning `ip` (4 bytes when v4, else 16), held; NULL when none. */
struct net_device *rdma_rs_net_ip_dev_find(bool v4, const u8 *ip)
{
	struct net_device *dev = NULL;

	if (v4) {
		__be32 a;

		memcpy(&a, ip, 4);
		return ip_dev_find(&init_net, a);
	}
#if IS_ENABLED(CONFIG_IPV6)
	rcu_read_lock();
	for_each_netdev_rcu(&init_net, dev) {
		if (ipv6_chk_addr(&init_net, (const struct in6_addr *)ip, dev, 1)) {
			dev_hold(dev);
			break;
		}
	}
	rcu_read_unlock();
#endif
	return dev;
}

/*
 * Routes to `dip` from `sip` (all zero: any source) in init_net, out of `oif` when non-zero.
 * Returns the out device held and writes the source the route chose into `sip`; a local route
 * (RTN_LOCAL, RTF_LOCAL) gives the device that owns `dip` (upstream rdma_set_src_addr_rcu()),
 * any other the route's device, the loopback one included. NULL with *err set on failure: the
 * routing's errno, -ENODEV for a local route no device owns.
 */
struct net_device *rdma_rs_net_route_src(bool v4, u8 *sip, const u8 *dip, int oif, int *err)
{
	struct net_device *ndev = NULL;
	struct dst_entry *dst;
	bool local;

	*err = 0;
	if (v4) {
		struct flowi4 fl4 = {};
		struct rtable *rt;

		memcpy(&fl4.daddr, dip, 4);
		memcpy(&fl4.saddr, sip, 4);
		fl4.flowi4_oif = oif;
		rt = ip_route_output_key(&init_net, &fl4);
		if (IS_ERR(rt)) {
			*err = PTR_ERR(rt);
			return NULL;
		}
		memcpy(sip, &fl4.saddr, 4);
		dst = &rt->dst;
		local = rt->rt_type == RTN_LOCAL;
	} else {
#if IS_ENABLED(CONFIG_IPV6)
		struct flowi6 fl6 = {};

		memcpy(&fl6.daddr, dip, 16);
		memcpy(&fl6.saddr, sip, 16);
		fl6.flowi6_oif = oif;
		dst = ip6_dst_lookup_flow(&init_net, NULL, &fl6, NULL);
		if (IS_ERR(dst)) {
			*err = PTR_ERR(dst);
			return NULL;
		}
		memcpy(sip, &fl6.saddr, 16);
		local = !!(dst_rt6_info(dst)->rt6i_flags & RTF_LOCAL);
#else
		*err = -EAFNOSUPPORT;
		return NULL;
#endif
	}
	if (local) {
		ndev = rdma_rs_net_ip_dev_find(v4, dip);
		if (!ndev)
			*err = -ENODEV;
	} else {
		ndev = dst->dev;
		dev_hold(ndev);
	}
	dst_release(dst);
	return ndev;
}

/* inet_get_local_port_range() of init_net (upstream cma_alloc_any_port()). */
void rdma_rs_net_local_port_range(int *low, int *high)
{
	inet_get_local_port_range(&init_net, low, high);
}

u32 rdma_rs_random_u32(void)
{
	return get_random_u32();
}

/* upstream cma_use_port(): a port below PROT_SOCK needs CAP_NET_BIND_SERVICE. */
bool rdma_rs_capable_net_bind_service(void)
{
	return capable(CAP_NET_BIND_SERVICE);
}

/*
 * upstream cma_igmp_send(): interface `ifindex` of init_net joins (ip_mc_inc_group()) or leaves
 * (ip_mc_dec_group()) the IPv4 group `addr` (4 bytes). -ENODEV without the interface or its
 * IPv4 configuration.
 */
int rdma_rs_net_igmp(int ifindex, const u8 *addr, bool join)
{
	struct net_device *ndev = dev_get_by_index(&init_net, ifindex);
	struct in_device *in_dev;
	__be32 a;

	if (!ndev)
		return -ENODEV;
	memcpy(&a, addr, 4);
	rtnl_lock();
	in_dev = __in_dev_get_rtnl(ndev);
	if (in_dev) {
		if (join)
			ip_mc_inc_group(in_dev, a);
		else
			ip_mc_dec_group(in_dev, a);
	}
	rtnl_unlock();
	dev_put(ndev);
	return in_dev ? 0 : -ENODEV;
}
