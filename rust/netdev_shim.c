// SPDX-License-Identifier: GPL-2.0
/*
 * C shim for rust/netdev.rs: an Ethernet or IPoIB net_device whose open, stop
 * and transmit call back into Rust. alloc_etherdev() is a macro; the skb helpers,
 * dev_hold()/dev_put(), the carrier and the dstats counters are static
 * inlines, and the net_device_ops table is a C struct the Rust bindings of
 * 7.3 do not carry.
 *
 * The private area holds the Rust callbacks and their data pointer. The
 * transmit path hands the frame's bytes (the skb made linear) to Rust and
 * frees the skb itself on every path; it counts tx packets/bytes or a tx
 * drop in the core's per-CPU dstats (NETDEV_PCPU_STAT_DSTATS), which
 * dev_get_stats() folds into the interface's statistics. The readers of
 * ifindex, name, MTU and carrier are rust/net_notify_shim.c's (one module).
 */

#include <linux/etherdevice.h>
#include <linux/if_arp.h>
#include <linux/if_infiniband.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/skbuff.h>
#include <linux/string.h>
#include <net/pkt_sched.h>

/* What Rust provides: callbacks over its data pointer. */
struct rdma_rs_netdev_cbs {
	int (*open)(const void *data, struct net_device *dev);
	void (*stop)(const void *data, struct net_device *dev);
	/* true: the frame was taken (sent); false: dropped. */
	bool (*xmit)(const void *data, struct net_device *dev, const u8 *frame,
		     unsigned int len);
	int (*change_mtu)(const void *data, struct net_device *dev, unsigned int mtu);
};

struct rdma_rs_netdev_priv {
	const struct rdma_rs_netdev_cbs *cbs;
	const void *data;
};

struct net_device *rdma_rs_netdev_alloc(const struct rdma_rs_netdev_cbs *cbs,
					const void *data, struct device *parent);
struct net_device *rdma_rs_netdev_alloc_ib(const struct rdma_rs_netdev_cbs *cbs,
					   const void *data, struct device *parent);
void rdma_rs_netdev_free(struct net_device *dev);
void rdma_rs_netdev_set_ib_addr(struct net_device *dev, const u8 *addr,
				const u8 *broadcast);
void rdma_rs_netdev_link(struct net_device *dev, unsigned short *type,
			 unsigned char *addr_len, u8 *addr, u8 *broadcast);
void rdma_rs_netdev_set_mac(struct net_device *dev, const u8 *mac);
void rdma_rs_netdev_set_mtu(struct net_device *dev, unsigned int mtu,
			    unsigned int min, unsigned int max);
int rdma_rs_netdev_register(struct net_device *dev);
void rdma_rs_netdev_unregister(struct net_device *dev);
int rdma_rs_netdev_open(struct net_device *dev);
int rdma_rs_netdev_change_mtu(struct net_device *dev, unsigned int mtu);
void rdma_rs_netdev_set_carrier(struct net_device *dev, bool on);
bool rdma_rs_netdev_running(struct net_device *dev);
int rdma_rs_netdev_rx(struct net_device *dev, const u8 *frame, unsigned int len);
int rdma_rs_netdev_rx_ib(struct net_device *dev, const u8 *pkt, unsigned int len,
			 unsigned char pkt_type);
int rdma_rs_netdev_send(struct net_device *dev, u16 proto, const u8 *daddr,
			const u8 *payload, unsigned int len);
void rdma_rs_netdev_hold(struct net_device *dev);
void rdma_rs_netdev_put(struct net_device *dev);

static struct rdma_rs_netdev_priv *priv_of(struct net_device *dev)
{
	return netdev_priv(dev);
}

static int rdma_rs_ndo_open(struct net_device *dev)
{
	struct rdma_rs_netdev_priv *p = priv_of(dev);

	return p->cbs->open(p->data, dev);
}

static int rdma_rs_ndo_stop(struct net_device *dev)
{
	struct rdma_rs_netdev_priv *p = priv_of(dev);

	p->cbs->stop(p->data, dev);
	return 0;
}

static netdev_tx_t rdma_rs_ndo_start_xmit(struct sk_buff *skb, struct net_device *dev)
{
	struct rdma_rs_netdev_priv *p = priv_of(dev);
	unsigned int len = skb->len;

	/* No NETIF_F_SG is offered, so the stack sends linear skbs; be safe anyway. */
	if (skb_linearize(skb) || !p->cbs->xmit(p->data, dev, skb->data, len)) {
		dev_dstats_tx_dropped(dev);
		dev_kfree_skb_any(skb);
		return NETDEV_TX_OK;
	}
	dev_dstats_tx_add(dev, len);
	dev_consume_skb_any(skb);
	return NETDEV_TX_OK;
}

/* The core checked min_mtu/max_mtu (dev_validate_mtu()); the driver may refuse. */
static int rdma_rs_ndo_change_mtu(struct net_device *dev, int new_mtu)
{
	struct rdma_rs_netdev_priv *p = priv_of(dev);
	int err = p->cbs->change_mtu(p->data, dev, new_mtu);

	if (!err)
		WRITE_ONCE(dev->mtu, new_mtu);
	return err;
}

static const struct net_device_ops rdma_rs_netdev_ops = {
	.ndo_open = rdma_rs_ndo_open,
	.ndo_stop = rdma_rs_ndo_stop,
	.ndo_start_xmit = rdma_rs_ndo_start_xmit,
	.ndo_change_mtu = rdma_rs_ndo_change_mtu,
	.ndo_set_mac_address = eth_mac_addr,
	.ndo_validate_addr = eth_validate_addr,
};

/*
 * IPoIB (RFC 4391, upstream drivers/infiniband/ulp/ipoib): the 4-byte
 * encapsulation header on the wire, and in front of it, between header_ops
 * and ndo_start_xmit only, the 20-byte destination hardware address (upstream
 * struct ipoib_pseudo_header): the IPoIB neighbour is not looked up from a
 * dst_entry, the address rides in the skb.
 */
#define RDMA_RS_IPOIB_ENCAP_LEN 4
#define RDMA_RS_IPOIB_PSEUDO_LEN INFINIBAND_ALEN
#define RDMA_RS_IPOIB_HARD_LEN (RDMA_RS_IPOIB_ENCAP_LEN + RDMA_RS_IPOIB_PSEUDO_LEN)

/* upstream ipoib_hard_header(): the IPoIB header, then the pseudo header. */
static int rdma_rs_ipoib_hard_header(struct sk_buff *skb, struct net_device *dev,
				     unsigned short type, const void *daddr,
				     const void *saddr, unsigned int len)
{
	__be16 *hdr = skb_push(skb, RDMA_RS_IPOIB_ENCAP_LEN);
	u8 *pseudo;

	hdr[0] = htons(type);
	hdr[1] = 0;
	pseudo = skb_push(skb, RDMA_RS_IPOIB_PSEUDO_LEN);
	if (daddr)
		memcpy(pseudo, daddr, INFINIBAND_ALEN);
	else
		memset(pseudo, 0, INFINIBAND_ALEN);
	return RDMA_RS_IPOIB_HARD_LEN;
}

static const struct header_ops rdma_rs_ipoib_header_ops = {
	.create = rdma_rs_ipoib_hard_header,
};

/* No MAC to set or validate: the address is the port's QPN and GID. */
static const struct net_device_ops rdma_rs_ipoib_netdev_ops = {
	.ndo_open = rdma_rs_ndo_open,
	.ndo_stop = rdma_rs_ndo_stop,
	.ndo_start_xmit = rdma_rs_ndo_start_xmit,
	.ndo_change_mtu = rdma_rs_ndo_change_mtu,
};

/* upstream ipoib_setup_common(), without ethtool and the watchdog. */
static void rdma_rs_ipoib_setup(struct net_device *dev)
{
	dev->header_ops = &rdma_rs_ipoib_header_ops;
	dev->netdev_ops = &rdma_rs_ipoib_netdev_ops;
	dev->flags |= IFF_BROADCAST | IFF_MULTICAST;
	dev->hard_header_len = RDMA_RS_IPOIB_HARD_LEN;
	dev->addr_len = INFINIBAND_ALEN;
	dev->type = ARPHRD_INFINIBAND;
	dev->tx_queue_len = DEFAULT_TX_QUEUE_LEN;
	dev->features = NETIF_F_VLAN_CHALLENGED;
	netif_keep_dst(dev);
}

static void rdma_rs_netdev_init(struct net_device *dev,
				const struct rdma_rs_netdev_cbs *cbs,
				const void *data, struct device *parent)
{
	struct rdma_rs_netdev_priv *p = priv_of(dev);

	p->cbs = cbs;
	p->data = data;
	dev->pcpu_stat_type = NETDEV_PCPU_STAT_DSTATS;
	/*
	 * Lockless transmit, as veth and vlan devices: the Rust side locks what it
	 * shares, and a frame the segment forwards out of an uplink goes through
	 * dev_queue_xmit() inside this transmit; holding this queue's lock there
	 * would nest two locks of the one _xmit_ETHER lockdep class.
	 */
	dev->lltx = true;
	if (parent)
		SET_NETDEV_DEV(dev, parent);
	netif_carrier_off(dev);
}

/*
 * An Ethernet device (ether_setup() defaults), not registered, carrier off,
 * its parent @parent (may be NULL): /sys/class/net/X/device. Movable to another
 * network namespace (netns_immutable stays clear).
 */
struct net_device *rdma_rs_netdev_alloc(const struct rdma_rs_netdev_cbs *cbs,
					const void *data, struct device *parent)
{
	struct net_device *dev = alloc_etherdev(sizeof(struct rdma_rs_netdev_priv));

	if (!dev)
		return NULL;
	dev->netdev_ops = &rdma_rs_netdev_ops;
	rdma_rs_netdev_init(dev, cbs, data, parent);
	return dev;
}
EXPORT_SYMBOL_GPL(rdma_rs_netdev_alloc);

/*
 * An IPoIB device named ib%d (rdma_rs_ipoib_setup()), otherwise as
 * rdma_rs_netdev_alloc(). Its address and broadcast address are zero until
 * rdma_rs_netdev_set_ib_addr().
 */
struct net_device *rdma_rs_netdev_alloc_ib(const struct rdma_rs_netdev_cbs *cbs,
					   const void *data, struct device *parent)
{
	struct net_device *dev = alloc_netdev(sizeof(struct rdma_rs_netdev_priv), "ib%d",
					      NET_NAME_UNKNOWN, rdma_rs_ipoib_setup);

	if (!dev)
		return NULL;
	rdma_rs_netdev_init(dev, cbs, data, parent);
	return dev;
}
EXPORT_SYMBOL_GPL(rdma_rs_netdev_alloc_ib);

/* Before registration: the hardware and broadcast addresses (INFINIBAND_ALEN bytes each). */
void rdma_rs_netdev_set_ib_addr(struct net_device *dev, const u8 *addr,
				const u8 *broadcast)
{
	dev_addr_set(dev, addr);
	memcpy(dev->broadcast, broadcast, INFINIBAND_ALEN);
}
EXPORT_SYMBOL_GPL(rdma_rs_netdev_set_ib_addr);

/*
 * The link type, address length, address and broadcast address (MAX_ADDR_LEN
 * bytes each, zero past addr_len), as `ip -d link` shows them.
 */
void rdma_rs_netdev_link(struct net_device *dev, unsigned short *type,
			 unsigned char *addr_len, u8 *addr, u8 *broadcast)
{
	*type = dev->type;
	*addr_len = dev->addr_len;
	memset(addr, 0, MAX_ADDR_LEN);
	memset(broadcast, 0, MAX_ADDR_LEN);
	memcpy(addr, dev->dev_addr, min_t(unsigned int, dev->addr_len, MAX_ADDR_LEN));
	memcpy(broadcast, dev->broadcast, min_t(unsigned int, dev->addr_len, MAX_ADDR_LEN));
}
EXPORT_SYMBOL_GPL(rdma_rs_netdev_link);

void rdma_rs_netdev_free(struct net_device *dev)
{
	free_netdev(dev);
}
EXPORT_SYMBOL_GPL(rdma_rs_netdev_free);

void rdma_rs_netdev_set_mac(struct net_device *dev, const u8 *mac)
{
	eth_hw_addr_set(dev, mac);
}
EXPORT_SYMBOL_GPL(rdma_rs_netdev_set_mac);

void rdma_rs_netdev_set_mtu(struct net_device *dev, unsigned int mtu,
			    unsigned int min, unsigned int max)
{
	dev->min_mtu = min;
	dev->max_mtu = max;
	dev->mtu = mtu;
}
EXPORT_SYMBOL_GPL(rdma_rs_netdev_set_mtu);

int rdma_rs_netdev_register(struct net_device *dev)
{
	return register_netdev(dev);
}
EXPORT_SYMBOL_GPL(rdma_rs_netdev_register);

void rdma_rs_netdev_unregister(struct net_device *dev)
{
	unregister_netdev(dev);
}
EXPORT_SYMBOL_GPL(rdma_rs_netdev_unregister);

/* Brings the interface up as `ip link set dev X up` does. */
int rdma_rs_netdev_open(struct net_device *dev)
{
	int err;

	rtnl_lock();
	err = dev_open(dev, NULL);
	rtnl_unlock();
	return err;
}
EXPORT_SYMBOL_GPL(rdma_rs_netdev_open);

int rdma_rs_netdev_change_mtu(struct net_device *dev, unsigned int mtu)
{
	int err;

	rtnl_lock();
	err = dev_set_mtu(dev, mtu);
	rtnl_unlock();
	return err;
}
EXPORT_SYMBOL_GPL(rdma_rs_netdev_change_mtu);

void rdma_rs_netdev_set_carrier(struct net_device *dev, bool on)
{
	if (on)
		netif_carrier_on(dev);
	else
		netif_carrier_off(dev);
}
EXPORT_SYMBOL_GPL(rdma_rs_netdev_set_carrier);

bool rdma_rs_netdev_running(struct net_device *dev)
{
	return netif_running(dev);
}
EXPORT_SYMBOL_GPL(rdma_rs_netdev_running);

/* netif_rx() of a received skb (freed on failure), counted as @len bytes or a drop. */
static int rdma_rs_netdev_deliver(struct net_device *dev, struct sk_buff *skb,
				  unsigned int len)
{
	if (netif_rx(skb) != NET_RX_SUCCESS) {
		dev_dstats_rx_dropped(dev);
		return -EIO;
	}
	dev_dstats_rx_add(dev, len);
	return 0;
}

/*
 * A received frame: copied into a new skb, its protocol from eth_type_trans(),
 * queued with netif_rx() (any context). Counts rx packets/bytes, or a drop
 * (no memory, a runt, a device that is not running). 0 or -ENOMEM/-EINVAL/-EIO.
 */
int rdma_rs_netdev_rx(struct net_device *dev, const u8 *frame, unsigned int len)
{
	struct sk_buff *skb;

	if (len < ETH_HLEN) {
		dev_dstats_rx_dropped(dev);
		return -EINVAL;
	}
	skb = netdev_alloc_skb_ip_align(dev, len);
	if (!skb) {
		dev_dstats_rx_dropped(dev);
		return -ENOMEM;
	}
	skb_put_data(skb, frame, len);
	skb->protocol = eth_type_trans(skb, dev);
	return rdma_rs_netdev_deliver(dev, skb, len);
}
EXPORT_SYMBOL_GPL(rdma_rs_netdev_rx);

/*
 * A received IPoIB packet, the GRH stripped: the 4-byte IPoIB header, then the
 * payload. As upstream ipoib_ib_handle_rx_wc(): the protocol from the header,
 * a zeroed pseudo header in front as the MAC header (skb_add_pseudo_hdr()),
 * @pkt_type (PACKET_HOST, _BROADCAST, _MULTICAST) from the destination GID;
 * netif_rx(). Counts as rdma_rs_netdev_rx().
 */
int rdma_rs_netdev_rx_ib(struct net_device *dev, const u8 *pkt, unsigned int len,
			 unsigned char pkt_type)
{
	struct sk_buff *skb;

	if (len < RDMA_RS_IPOIB_ENCAP_LEN || len > U32_MAX - RDMA_RS_IPOIB_PSEUDO_LEN) {
		dev_dstats_rx_dropped(dev);
		return -EINVAL;
	}
	skb = netdev_alloc_skb(dev, RDMA_RS_IPOIB_PSEUDO_LEN + len);
	if (!skb) {
		dev_dstats_rx_dropped(dev);
		return -ENOMEM;
	}
	skb_put_zero(skb, RDMA_RS_IPOIB_PSEUDO_LEN);
	skb_put_data(skb, pkt, len);
	skb->protocol = *(__be16 *)(skb->data + RDMA_RS_IPOIB_PSEUDO_LEN);
	skb_reset_mac_header(skb);
	skb_pull(skb, RDMA_RS_IPOIB_HARD_LEN);
	skb->pkt_type = pkt_type;
	return rdma_rs_netdev_deliver(dev, skb, len);
}
EXPORT_SYMBOL_GPL(rdma_rs_netdev_rx_ib);

/*
 * Sends @len bytes of @payload as protocol @proto to the hardware address
 * @daddr (dev->addr_len bytes) the way a protocol of the stack does (ARP's
 * arp_create() and arp_xmit()): a new skb with the link's headroom, the link
 * header from dev_hard_header() (the device's header_ops), dev_queue_xmit().
 * Any context but hard IRQ. 0, -ENOMEM, -EINVAL (the header_ops refused),
 * dev_queue_xmit()'s errno, or -ENOBUFS for a packet the queue dropped.
 */
int rdma_rs_netdev_send(struct net_device *dev, u16 proto, const u8 *daddr,
			const u8 *payload, unsigned int len)
{
	int hlen = LL_RESERVED_SPACE(dev);
	struct sk_buff *skb;
	int rc;

	if (len > dev->mtu)
		return -EINVAL;
	skb = alloc_skb(hlen + len + dev->needed_tailroom, GFP_ATOMIC);
	if (!skb)
		return -ENOMEM;
	skb_reserve(skb, hlen);
	skb_reset_network_header(skb);
	skb_put_data(skb, payload, len);
	skb->dev = dev;
	skb->protocol = htons(proto);
	if (dev_hard_header(skb, dev, proto, daddr, dev->dev_addr, skb->len) < 0) {
		kfree_skb(skb);
		return -EINVAL;
	}
	rc = dev_queue_xmit(skb);
	if (rc < 0)
		return rc;
	return rc == NET_XMIT_SUCCESS ? 0 : -ENOBUFS;
}
EXPORT_SYMBOL_GPL(rdma_rs_netdev_send);

void rdma_rs_netdev_hold(struct net_device *dev)
{
	dev_hold(dev);
}
EXPORT_SYMBOL_GPL(rdma_rs_netdev_hold);

void rdma_rs_netdev_put(struct net_device *dev)
{
	dev_put(dev);
}
EXPORT_SYMBOL_GPL(rdma_rs_netdev_put);
