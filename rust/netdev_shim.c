// SPDX-License-Identifier: GPL-2.0
/*
 * C shim for rust/netdev.rs: an Ethernet net_device whose open, stop and
 * transmit call back into Rust. alloc_etherdev() is a macro; the skb helpers,
 * dev_hold()/dev_put(), the carrier and the dstats counters are static
 * inlines, and the net_device_ops table is a C struct the Rust bindings of
 * 7.3 do not carry.
 *
 * The private area holds the Rust callbacks and their data pointer. The
 * transmit path hands the frame's bytes (the skb made linear) to Rust and
 * frees the skb itself on every path; it counts tx packets/bytes or a tx
 * drop in the core's per-CPU dstats (NETDEV_PCPU_STAT_DSTATS), which
 * dev_get_stats() folds into the interface's statistics.
 */

#include <linux/etherdevice.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/skbuff.h>
#include <linux/string.h>

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
void rdma_rs_netdev_free(struct net_device *dev);
void rdma_rs_netdev_set_mac(struct net_device *dev, const u8 *mac);
void rdma_rs_netdev_set_mtu(struct net_device *dev, unsigned int mtu,
			    unsigned int min, unsigned int max);
int rdma_rs_netdev_register(struct net_device *dev);
void rdma_rs_netdev_unregister(struct net_device *dev);
int rdma_rs_netdev_open(struct net_device *dev);
void rdma_rs_netdev_carrier(struct net_device *dev, bool on);
bool rdma_rs_netdev_carrier_ok(struct net_device *dev);
bool rdma_rs_netdev_running(struct net_device *dev);
unsigned int rdma_rs_netdev_mtu(struct net_device *dev);
int rdma_rs_netdev_ifindex(struct net_device *dev);
void rdma_rs_netdev_name(struct net_device *dev, char *name);
int rdma_rs_netdev_rx(struct net_device *dev, const u8 *frame, unsigned int len);
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
 * An Ethernet device (ether_setup() defaults), not registered, carrier off,
 * its parent @parent (may be NULL): /sys/class/net/X/device. Movable to another
 * network namespace (netns_immutable stays clear).
 */
struct net_device *rdma_rs_netdev_alloc(const struct rdma_rs_netdev_cbs *cbs,
					const void *data, struct device *parent)
{
	struct net_device *dev = alloc_etherdev(sizeof(struct rdma_rs_netdev_priv));
	struct rdma_rs_netdev_priv *p;

	if (!dev)
		return NULL;
	p = priv_of(dev);
	p->cbs = cbs;
	p->data = data;
	dev->netdev_ops = &rdma_rs_netdev_ops;
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
	return dev;
}

void rdma_rs_netdev_free(struct net_device *dev)
{
	free_netdev(dev);
}

void rdma_rs_netdev_set_mac(struct net_device *dev, const u8 *mac)
{
	eth_hw_addr_set(dev, mac);
}

void rdma_rs_netdev_set_mtu(struct net_device *dev, unsigned int mtu,
			    unsigned int min, unsigned int max)
{
	dev->min_mtu = min;
	dev->max_mtu = max;
	dev->mtu = mtu;
}

int rdma_rs_netdev_register(struct net_device *dev)
{
	return register_netdev(dev);
}

void rdma_rs_netdev_unregister(struct net_device *dev)
{
	unregister_netdev(dev);
}

/* Brings the interface up as `ip link set dev X up` does. */
int rdma_rs_netdev_open(struct net_device *dev)
{
	int err;

	rtnl_lock();
	err = dev_open(dev, NULL);
	rtnl_unlock();
	return err;
}

void rdma_rs_netdev_carrier(struct net_device *dev, bool on)
{
	if (on)
		netif_carrier_on(dev);
	else
		netif_carrier_off(dev);
}

bool rdma_rs_netdev_carrier_ok(struct net_device *dev)
{
	return netif_carrier_ok(dev);
}

bool rdma_rs_netdev_running(struct net_device *dev)
{
	return netif_running(dev);
}

unsigned int rdma_rs_netdev_mtu(struct net_device *dev)
{
	return READ_ONCE(dev->mtu);
}

int rdma_rs_netdev_ifindex(struct net_device *dev)
{
	return READ_ONCE(dev->ifindex);
}

/*
 * Copies the name (IFNAMSIZ bytes, always NUL-terminated). netdev_copy_name()
 * is not exported; like the RDMA core's nldev (fill_port_info() reads
 * netdev->name), a copy racing with a rename may see either name.
 */
void rdma_rs_netdev_name(struct net_device *dev, char *name)
{
	strscpy(name, dev->name, IFNAMSIZ);
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
	if (netif_rx(skb) != NET_RX_SUCCESS) {
		/* netif_rx() freed the skb. */
		dev_dstats_rx_dropped(dev);
		return -EIO;
	}
	dev_dstats_rx_add(dev, len);
	return 0;
}

void rdma_rs_netdev_hold(struct net_device *dev)
{
	dev_hold(dev);
}

void rdma_rs_netdev_put(struct net_device *dev)
{
	dev_put(dev);
}
