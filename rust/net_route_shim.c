// SPDX-License-Identifier: GPL-2.0
/*
 * C shim for rust/net_route.rs: one attempt at the L2 address of an IP destination out of a
 * net_device, as upstream drivers/infiniband/core/addr.c's addr_resolve() does it for a GID
 * attribute (route from the device's namespace bound to the device, then the local check or the
 * neighbour). The routing and neighbour calls are inline functions or take structs the kernel
 * crate's bindings lack.
 */

#include <linux/netdevice.h>
#include <linux/inetdevice.h>
#include <net/addrconf.h>
#include <net/ip6_route.h>
#include <net/neighbour.h>
#include <net/route.h>

int rdma_rs_net_l2_by_ip(struct net_device *ndev, bool v4, const u8 *sip, const u8 *dip,
			 u8 *ha, u8 *hop_limit);

/* INFINIBAND_ALEN: the longest hardware address a resolution gives (IPoIB's). */
#define RDMA_RS_HA_LEN 20

/*
 * rdma_rs_net_l2_by_ip(): v4 says whether `sip`/`dip` are 4-byte IPv4 addresses (else 16-byte
 * IPv6). On 0, `ha` (20 bytes, zero past the device's address length) holds the destination's
 * hardware address (an Ethernet MAC, or an IPoIB address) and `*hop_limit` the route's hop
 * limit. -ENODATA: the neighbour is not valid yet and a resolution was started
 * (neigh_event_send(), upstream dst_fetch_ha()); the caller retries. Other errors are the
 * routing's (ip_route_output_key(), ip6_dst_lookup_flow()) or -ENODEV for a local route to an
 * address no device owns (upstream rdma_set_src_addr_rcu()).
 */
int rdma_rs_net_l2_by_ip(struct net_device *ndev, bool v4, const u8 *sip, const u8 *dip,
			 u8 *ha, u8 *hop_limit)
{
	struct net *net = dev_net(ndev);
	struct rtable *rt = NULL;
	struct dst_entry *dst;
	struct neighbour *n;
	bool local;
	int ret = 0;

	if (v4) {
		struct flowi4 fl4 = {};

		memcpy(&fl4.daddr, dip, 4);
		memcpy(&fl4.saddr, sip, 4);
		fl4.flowi4_oif = ndev->ifindex;
		rt = ip_route_output_key(net, &fl4);
		if (IS_ERR(rt))
			return PTR_ERR(rt);
		dst = &rt->dst;
		*hop_limit = ip4_dst_hoplimit(dst);
		local = rt->rt_type == RTN_LOCAL;
	} else {
#if IS_ENABLED(CONFIG_IPV6)
		struct flowi6 fl6 = {};

		memcpy(&fl6.daddr, dip, 16);
		memcpy(&fl6.saddr, sip, 16);
		fl6.flowi6_oif = ndev->ifindex;
		dst = ip6_dst_lookup_flow(net, NULL, &fl6, NULL);
		if (IS_ERR(dst))
			return PTR_ERR(dst);
		*hop_limit = ip6_dst_hoplimit(dst);
		local = !!(dst_rt6_info(dst)->rt6i_flags & RTF_LOCAL);
#else
		return -EADDRNOTAVAIL;
#endif
	}

	if (local) {
		/*
		 * upstream rdma_set_src_addr_rcu(): a local route needs a device owning the
		 * destination; the address then resolves to the bound device's own address
		 * (rdma_translate_ip() with bound_dev_if, addr_resolve_neigh()).
		 */
		struct net_device *owner = NULL;

		rcu_read_lock();
		if (v4) {
			__be32 a;

			memcpy(&a, dip, 4);
			owner = __ip_dev_find(net, a, false);
		} else {
#if IS_ENABLED(CONFIG_IPV6)
			struct net_device *d;

			for_each_netdev_rcu(net, d) {
				if (ipv6_chk_addr(net, (const struct in6_addr *)dip, d, 1)) {
					owner = d;
					break;
				}
			}
#endif
		}
		rcu_read_unlock();
		memset(ha, 0, RDMA_RS_HA_LEN);
		if (owner)
			memcpy(ha, ndev->dev_addr, min_t(unsigned int, ndev->addr_len, RDMA_RS_HA_LEN));
		else
			ret = -ENODEV;
		goto out;
	}

	/* upstream dst_fetch_ha() */
	n = dst_neigh_lookup(dst, dip);
	if (!n) {
		ret = -ENODATA;
		goto out;
	}
	read_lock_bh(&n->lock);
	if (!(n->nud_state & NUD_VALID)) {
		read_unlock_bh(&n->lock);
		neigh_event_send(n, NULL);
		ret = -ENODATA;
	} else {
		u8 nha[MAX_ADDR_LEN];

		neigh_ha_snapshot(nha, n, dst->dev);
		read_unlock_bh(&n->lock);
		memset(ha, 0, RDMA_RS_HA_LEN);
		memcpy(ha, nha, min_t(unsigned int, dst->dev->addr_len, RDMA_RS_HA_LEN));
	}
	neigh_release(n);
out:
	if (v4)
		ip_rt_put(rt);
	else
		dst_release(dst);
	return ret;
}
