// SPDX-License-Identifier: GPL-2.0
/*
 * C shim for rust/uplink.rs: a real interface as a port of a simulated
 * Ethernet segment, as a bridge port (net/bridge/br_if.c, br_add_if()): the
 * interface in promiscuous mode and an rx_handler on it that hands received
 * frames to Rust; frames from the segment leave through dev_queue_xmit().
 * netdev_rx_handler_register() and dev_set_promiscuity() need the RTNL;
 * the handler runs under rcu_read_lock() in the receive softirq.
 */

#include <linux/etherdevice.h>
#include <linux/if_arp.h>
#include <linux/if_vlan.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <net/gso.h>
#include <net/net_namespace.h>

/* What Rust provides: a callback over its data pointer (any context, no sleep). */
struct rdma_rs_uplink_cbs {
	void (*rx)(const void *data, const u8 *frame, unsigned int len);
};

struct rdma_rs_uplink {
	const struct rdma_rs_uplink_cbs *cbs;
	const void *data;
};

struct net_device *rdma_rs_uplink_attach(const char *name,
					 const struct rdma_rs_uplink_cbs *cbs,
					 const void *data, int *err);
void rdma_rs_uplink_detach(struct net_device *dev);
int rdma_rs_uplink_xmit(struct net_device *dev, const u8 *frame, unsigned int len);

/* Hands one frame (@skb->data at its Ethernet header) to Rust, linear. */
static void rdma_rs_uplink_deliver(const struct rdma_rs_uplink *up, struct sk_buff *skb)
{
	u8 *buf;

	if (!skb_is_nonlinear(skb)) {
		up->cbs->rx(up->data, skb->data, skb->len);
		return;
	}
	buf = kmalloc(skb->len, GFP_ATOMIC);
	if (!buf)
		return;
	if (!skb_copy_bits(skb, 0, buf, skb->len))
		up->cbs->rx(up->data, buf, skb->len);
	kfree(buf);
}

/*
 * A frame whose checksum another device was to finish (CHECKSUM_PARTIAL: a
 * veth peer, a virtio-net peer with VIRTIO_NET_HDR_F_NEEDS_CSUM) or that
 * stands for several (GSO, from the same peers or GRO) is not what a wire
 * carries: a private copy gets its checksum computed (skb_checksum_help()) or
 * is cut into wire-sized frames with their checksums (__skb_gso_segment()
 * without offload features, on the receive path, as openvswitch's upcalls).
 */
static void rdma_rs_uplink_deliver_resolved(const struct rdma_rs_uplink *up,
					    struct sk_buff *skb, unsigned int mac_len)
{
	struct sk_buff *c = skb_copy(skb, GFP_ATOMIC), *segs, *seg, *next;

	if (!c)
		return;
	__skb_push(c, mac_len);
	if (skb_is_gso(c)) {
		/* Received GSO without a checksum state is a bad offload (a WARN). */
		if (c->ip_summed == CHECKSUM_NONE) {
			kfree_skb(c);
			return;
		}
		segs = __skb_gso_segment(c, 0, false);
		if (IS_ERR(segs)) {
			kfree_skb(c);
			return;
		}
		if (segs && segs != c) {
			consume_skb(c);
			skb_list_walk_safe(segs, seg, next) {
				skb_mark_not_on_list(seg);
				rdma_rs_uplink_deliver(up, seg);
				consume_skb(seg);
			}
			return;
		}
		/* Not segmented: one frame, its checksum finished below. */
	}
	if (c->ip_summed != CHECKSUM_PARTIAL || !skb_checksum_help(c))
		rdma_rs_uplink_deliver(up, c);
	consume_skb(c);
}

/*
 * Frames for the interface's own address stay its own; every other frame
 * (another station's unicast, seen in promiscuous mode, broadcast, multicast)
 * is copied to the segment. The skb always goes on up the interface's stack,
 * which keeps broadcast and multicast and drops other hosts' frames
 * (PACKET_OTHERHOST) as it does without the handler.
 */
static rx_handler_result_t rdma_rs_uplink_rx(struct sk_buff **pskb)
{
	struct sk_buff *skb = *pskb;
	struct rdma_rs_uplink *up = rcu_dereference(skb->dev->rx_handler_data);
	unsigned int mac_len;

	if (!up || skb->pkt_type == PACKET_HOST || skb->pkt_type == PACKET_LOOPBACK ||
	    !skb_mac_header_was_set(skb))
		return RX_HANDLER_PASS;
	mac_len = skb->data - skb_mac_header(skb);
	if (mac_len < ETH_HLEN || mac_len > skb_headroom(skb))
		return RX_HANDLER_PASS;
	if (skb_is_gso(skb) || skb->ip_summed == CHECKSUM_PARTIAL) {
		rdma_rs_uplink_deliver_resolved(up, skb, mac_len);
		return RX_HANDLER_PASS;
	}
	/* The stack's view starts after the header: look at the whole frame. */
	__skb_push(skb, mac_len);
	rdma_rs_uplink_deliver(up, skb);
	__skb_pull(skb, mac_len);
	return RX_HANDLER_PASS;
}

/*
 * Attaches to the interface @name of the initial namespace: a reference
 * (dev_hold), promiscuous mode, the rx_handler. NULL with *err set on
 * failure (-ENODEV: no such interface; -EBUSY: it has an rx_handler, e.g. it
 * is a bridge port; -ENOMEM).
 */
struct net_device *rdma_rs_uplink_attach(const char *name,
					 const struct rdma_rs_uplink_cbs *cbs,
					 const void *data, int *err)
{
	struct rdma_rs_uplink *up;
	struct net_device *dev;

	up = kzalloc(sizeof(*up), GFP_KERNEL);
	if (!up) {
		*err = -ENOMEM;
		return NULL;
	}
	up->cbs = cbs;
	up->data = data;
	rtnl_lock();
	dev = __dev_get_by_name(&init_net, name);
	if (!dev) {
		*err = -ENODEV;
		goto fail;
	}
	if (dev->type != ARPHRD_ETHER) {
		*err = -EINVAL;
		goto fail;
	}
	*err = dev_set_promiscuity(dev, 1);
	if (*err)
		goto fail;
	*err = netdev_rx_handler_register(dev, rdma_rs_uplink_rx, up);
	if (*err) {
		dev_set_promiscuity(dev, -1);
		goto fail;
	}
	dev_hold(dev);
	rtnl_unlock();
	return dev;
fail:
	rtnl_unlock();
	kfree(up);
	return NULL;
}

/*
 * Undoes rdma_rs_uplink_attach(): the handler unregistered (which waits for
 * the handlers running: synchronize_net()), promiscuous mode left. The
 * reference taken by the attach stays the caller's to put (dev_put()). No
 * Rust callback runs after it returns.
 */
void rdma_rs_uplink_detach(struct net_device *dev)
{
	struct rdma_rs_uplink *up;

	rtnl_lock();
	up = rtnl_dereference(dev->rx_handler_data);
	netdev_rx_handler_unregister(dev);
	dev_set_promiscuity(dev, -1);
	rtnl_unlock();
	kfree(up);
}

/*
 * Sends a copy of @frame (an Ethernet frame) out of @dev: a new skb, the
 * protocol from its header, dev_queue_xmit() (any context but hard IRQ; the
 * core's recursion limit guards against loops). 0, -EINVAL (a runt or a frame
 * longer than the MTU allows), -ENOMEM, -ENETDOWN, or dev_queue_xmit()'s
 * NET_XMIT_* errors as -ENOBUFS.
 */
int rdma_rs_uplink_xmit(struct net_device *dev, const u8 *frame, unsigned int len)
{
	struct sk_buff *skb;
	int ret;

	if (len < ETH_HLEN || len > READ_ONCE(dev->mtu) + VLAN_ETH_HLEN)
		return -EINVAL;
	if (!netif_running(dev))
		return -ENETDOWN;
	skb = alloc_skb(LL_RESERVED_SPACE(dev) + len, GFP_ATOMIC);
	if (!skb)
		return -ENOMEM;
	skb_reserve(skb, LL_RESERVED_SPACE(dev));
	skb_put_data(skb, frame, len);
	skb_reset_mac_header(skb);
	skb->protocol = eth_hdr(skb)->h_proto;
	skb_set_network_header(skb, ETH_HLEN);
	skb->dev = dev;
	ret = dev_queue_xmit(skb);
	return net_xmit_eval(ret) ? -ENOBUFS : 0;
}
