// SPDX-License-Identifier: GPL-2.0
/*
 * C shim for rust/net_notify.rs: the netdevice, inetaddr and inet6addr notifier chains, and
 * what the RoCE GID management reads of a struct net_device (its fields, dev_hold()/dev_put(),
 * its IPv4 and IPv6 address lists, its upper devices), which are inline functions, macros or
 * structs the kernel crate's bindings lack.
 */

#include <linux/etherdevice.h>
#include <linux/if_arp.h>
#include <linux/if_vlan.h>
#include <linux/inetdevice.h>
#include <linux/netdevice.h>
#include <linux/notifier.h>
#include <linux/slab.h>
#include <net/addrconf.h>
#include <net/if_inet6.h>

/* The event kinds the shim passes (rust/net_notify.rs, `NetEvent`). */
enum {
	RDMA_RS_NET_REGISTER = 1,
	RDMA_RS_NET_UNREGISTER = 2,
	RDMA_RS_NET_UP = 3,
	RDMA_RS_NET_DOWN = 4,
	RDMA_RS_NET_CHANGEADDR = 5,
	RDMA_RS_NET_LINK_UPPER = 6,
	RDMA_RS_NET_UNLINK_UPPER = 7,
	RDMA_RS_NET_CHANGE = 8,
	RDMA_RS_NET_UNREGISTER_MOVE = 9,
};

typedef void (*rdma_rs_netdev_fn)(void *ctx, int kind, struct net_device *ndev,
				  struct net_device *upper);
typedef void (*rdma_rs_addr_fn)(void *ctx, int up, struct net_device *ndev, int family,
				const u8 *addr);

struct rdma_rs_net_nb {
	struct notifier_block netdev;
	struct notifier_block inet;
	struct notifier_block inet6;
	void *ctx;
	rdma_rs_netdev_fn netdev_fn;
	rdma_rs_addr_fn addr_fn;
};

struct rdma_rs_net_nb *rdma_rs_net_notifier_register(void *ctx, rdma_rs_netdev_fn netdev_fn,
						     rdma_rs_addr_fn addr_fn);
void rdma_rs_net_notifier_unregister(struct rdma_rs_net_nb *nb);
struct net_device *rdma_rs_netdev_get_by_name(const char *name);
void rdma_rs_dev_hold(struct net_device *dev);
void rdma_rs_dev_put(struct net_device *dev);
int rdma_rs_netdev_ifindex(const struct net_device *dev);
void rdma_rs_netdev_name(const struct net_device *dev, char *buf, size_t len);
int rdma_rs_netdev_mac(const struct net_device *dev, u8 *mac);
unsigned int rdma_rs_netdev_mtu(const struct net_device *dev);
bool rdma_rs_netdev_is_up(const struct net_device *dev);
bool rdma_rs_netdev_carrier(const struct net_device *dev);
u8 rdma_rs_netdev_operstate(const struct net_device *dev);
bool rdma_rs_netdev_is_ether(const struct net_device *dev);
bool rdma_rs_netdev_registered(const struct net_device *dev);
u16 rdma_rs_netdev_vlan_id(const struct net_device *dev);
struct net_device *rdma_rs_netdev_vlan_real_dev(struct net_device *dev);
bool rdma_rs_netdev_is_upper(struct net_device *dev, struct net_device *upper);
int rdma_rs_netdev_uppers(struct net_device *dev, struct net_device **out, int max);
int rdma_rs_netdev_ipv4(struct net_device *dev, __be32 *out, int max);
int rdma_rs_netdev_ipv6(struct net_device *dev, struct in6_addr *out, int max);

static int rdma_rs_netdev_event(struct notifier_block *nb, unsigned long event, void *ptr)
{
	struct rdma_rs_net_nb *n = container_of(nb, struct rdma_rs_net_nb, netdev);
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);
	struct netdev_notifier_changeupper_info *cu;
	struct net_device *upper = NULL;
	int kind;

	/* upstream netdevice_event(): Ethernet devices only. */
	if (ndev->type != ARPHRD_ETHER)
		return NOTIFY_DONE;

	switch (event) {
	case NETDEV_REGISTER:
		kind = RDMA_RS_NET_REGISTER;
		break;
	case NETDEV_UP:
		kind = RDMA_RS_NET_UP;
		break;
	case NETDEV_DOWN:
		kind = RDMA_RS_NET_DOWN;
		break;
	case NETDEV_CHANGE:
		kind = RDMA_RS_NET_CHANGE;
		break;
	case NETDEV_UNREGISTER:
		/* upstream: only while the device is not yet unregistered. */
		if (ndev->reg_state >= NETREG_UNREGISTERED)
			return NOTIFY_DONE;
		/* A device moving to another namespace stays registered through its UNREGISTER. */
		kind = ndev->reg_state == NETREG_REGISTERED ? RDMA_RS_NET_UNREGISTER_MOVE :
							      RDMA_RS_NET_UNREGISTER;
		break;
	case NETDEV_CHANGEADDR:
		kind = RDMA_RS_NET_CHANGEADDR;
		break;
	case NETDEV_CHANGEUPPER:
		cu = container_of(ptr, struct netdev_notifier_changeupper_info, info);
		kind = cu->linking ? RDMA_RS_NET_LINK_UPPER : RDMA_RS_NET_UNLINK_UPPER;
		upper = cu->upper_dev;
		break;
	default:
		return NOTIFY_DONE;
	}
	n->netdev_fn(n->ctx, kind, ndev, upper);
	return NOTIFY_DONE;
}

static int rdma_rs_addr_event(struct rdma_rs_net_nb *n, unsigned long event,
			      struct net_device *ndev, int family, const u8 *addr)
{
	/* upstream addr_event(): Ethernet devices, NETDEV_UP and NETDEV_DOWN. */
	if (ndev->type != ARPHRD_ETHER)
		return NOTIFY_DONE;
	if (event != NETDEV_UP && event != NETDEV_DOWN)
		return NOTIFY_DONE;
	n->addr_fn(n->ctx, event == NETDEV_UP, ndev, family, addr);
	return NOTIFY_DONE;
}

static int rdma_rs_inet_event(struct notifier_block *nb, unsigned long event, void *ptr)
{
	struct rdma_rs_net_nb *n = container_of(nb, struct rdma_rs_net_nb, inet);
	struct in_ifaddr *ifa = ptr;

	return rdma_rs_addr_event(n, event, ifa->ifa_dev->dev, AF_INET,
				  (const u8 *)&ifa->ifa_address);
}

static int rdma_rs_inet6_event(struct notifier_block *nb, unsigned long event, void *ptr)
{
	struct rdma_rs_net_nb *n = container_of(nb, struct rdma_rs_net_nb, inet6);
	struct inet6_ifaddr *ifa6 = ptr;

	return rdma_rs_addr_event(n, event, ifa6->idev->dev, AF_INET6, ifa6->addr.s6_addr);
}

struct rdma_rs_net_nb *rdma_rs_net_notifier_register(void *ctx, rdma_rs_netdev_fn netdev_fn,
						     rdma_rs_addr_fn addr_fn)
{
	struct rdma_rs_net_nb *n = kzalloc(sizeof(*n), GFP_KERNEL);
	int ret;

	if (!n)
		return ERR_PTR(-ENOMEM);
	n->ctx = ctx;
	n->netdev_fn = netdev_fn;
	n->addr_fn = addr_fn;
	n->netdev.notifier_call = rdma_rs_netdev_event;
	n->inet.notifier_call = rdma_rs_inet_event;
	n->inet6.notifier_call = rdma_rs_inet6_event;

	/*
	 * upstream roce_gid_mgmt_init(): the address notifiers first, the netdevice notifier
	 * last (its registration replays REGISTER and UP for every existing device), so no
	 * address change is missed.
	 */
	ret = register_inetaddr_notifier(&n->inet);
	if (ret)
		goto free;
	if (IS_ENABLED(CONFIG_IPV6)) {
		ret = register_inet6addr_notifier(&n->inet6);
		if (ret)
			goto inet;
	}
	ret = register_netdevice_notifier(&n->netdev);
	if (ret)
		goto inet6;
	return n;

inet6:
	if (IS_ENABLED(CONFIG_IPV6))
		unregister_inet6addr_notifier(&n->inet6);
inet:
	unregister_inetaddr_notifier(&n->inet);
free:
	kfree(n);
	return ERR_PTR(ret);
}

void rdma_rs_net_notifier_unregister(struct rdma_rs_net_nb *n)
{
	/* upstream roce_gid_mgmt_cleanup()'s order. */
	if (IS_ENABLED(CONFIG_IPV6))
		unregister_inet6addr_notifier(&n->inet6);
	unregister_inetaddr_notifier(&n->inet);
	unregister_netdevice_notifier(&n->netdev);
	kfree(n);
}

/* dev_get_by_name() in the initial namespace: the device held, or NULL. */
struct net_device *rdma_rs_netdev_get_by_name(const char *name)
{
	return dev_get_by_name(&init_net, name);
}

void rdma_rs_dev_hold(struct net_device *dev)
{
	dev_hold(dev);
}

void rdma_rs_dev_put(struct net_device *dev)
{
	dev_put(dev);
}

int rdma_rs_netdev_ifindex(const struct net_device *dev)
{
	return READ_ONCE(dev->ifindex);
}
EXPORT_SYMBOL_GPL(rdma_rs_netdev_ifindex);

/* The name as upstream's sysfs `gid_attrs/ndevs/N` prints it (under RCU, `ndev->name`). */
void rdma_rs_netdev_name(const struct net_device *dev, char *buf, size_t len)
{
	rcu_read_lock();
	strscpy(buf, dev->name, len);
	rcu_read_unlock();
}
EXPORT_SYMBOL_GPL(rdma_rs_netdev_name);

/* Copies the 6-byte MAC into `mac`; -EINVAL for an address of another length. */
int rdma_rs_netdev_mac(const struct net_device *dev, u8 *mac)
{
	if (dev->addr_len != ETH_ALEN)
		return -EINVAL;
	/* Writers change dev_addr under RTNL with the same bytes copied out. */
	memcpy(mac, dev->dev_addr, ETH_ALEN);
	return 0;
}

unsigned int rdma_rs_netdev_mtu(const struct net_device *dev)
{
	return READ_ONCE(dev->mtu);
}
EXPORT_SYMBOL_GPL(rdma_rs_netdev_mtu);

bool rdma_rs_netdev_is_up(const struct net_device *dev)
{
	return READ_ONCE(dev->flags) & IFF_UP;
}

bool rdma_rs_netdev_carrier(const struct net_device *dev)
{
	return netif_carrier_ok(dev);
}
EXPORT_SYMBOL_GPL(rdma_rs_netdev_carrier);

u8 rdma_rs_netdev_operstate(const struct net_device *dev)
{
	return READ_ONCE(dev->operstate);
}

bool rdma_rs_netdev_is_ether(const struct net_device *dev)
{
	return dev->type == ARPHRD_ETHER;
}

bool rdma_rs_netdev_registered(const struct net_device *dev)
{
	return READ_ONCE(dev->reg_state) == NETREG_REGISTERED;
}

/* upstream rdma_read_gid_l2_fields(): the VLAN id of a VLAN device, 0xffff otherwise. */
u16 rdma_rs_netdev_vlan_id(const struct net_device *dev)
{
	if (IS_ENABLED(CONFIG_VLAN_8021Q) && is_vlan_dev(dev))
		return vlan_dev_vlan_id(dev);
	return 0xffff;
}

/* upstream rdma_vlan_dev_real_dev(): the real device of a VLAN device, else NULL; held. */
struct net_device *rdma_rs_netdev_vlan_real_dev(struct net_device *dev)
{
	struct net_device *real = NULL;

	if (IS_ENABLED(CONFIG_VLAN_8021Q) && is_vlan_dev(dev)) {
		real = vlan_dev_real_dev(dev);
		dev_hold(real);
	}
	return real;
}

/* upstream rdma_is_upper_dev_rcu(): whether `upper` is an upper device of `dev`. */
bool rdma_rs_netdev_is_upper(struct net_device *dev, struct net_device *upper)
{
	bool res;

	rcu_read_lock();
	res = netdev_has_upper_dev_all_rcu(dev, upper);
	rcu_read_unlock();
	return res;
}

struct rdma_rs_upper_walk {
	struct net_device **out;
	int max;
	int n;
};

static int rdma_rs_upper_one(struct net_device *upper, struct netdev_nested_priv *priv)
{
	struct rdma_rs_upper_walk *w = priv->data;

	if (w->n < w->max) {
		dev_hold(upper);
		w->out[w->n] = upper;
	}
	w->n++;
	return 0;
}

/*
 * upstream handle_netdev_upper(): every upper device of `dev`, each held, into `out` (at
 * most `max`); returns how many there are.
 */
int rdma_rs_netdev_uppers(struct net_device *dev, struct net_device **out, int max)
{
	struct rdma_rs_upper_walk w = { .out = out, .max = max, .n = 0 };
	struct netdev_nested_priv priv = { .data = &w };

	rcu_read_lock();
	netdev_walk_all_upper_dev_rcu(dev, rdma_rs_upper_one, &priv);
	rcu_read_unlock();
	return w.n;
}

/*
 * upstream enum_netdev_ipv4_ips(): the device's IPv4 addresses (`ifa_address`), in list
 * order, under RCU, into `out` (at most `max`); returns how many there are.
 */
int rdma_rs_netdev_ipv4(struct net_device *dev, __be32 *out, int max)
{
	const struct in_ifaddr *ifa;
	struct in_device *in_dev;
	int n = 0;

	if (READ_ONCE(dev->reg_state) >= NETREG_UNREGISTERING)
		return 0;
	rcu_read_lock();
	in_dev = __in_dev_get_rcu(dev);
	if (in_dev) {
		in_dev_for_each_ifa_rcu(ifa, in_dev) {
			if (n < max)
				out[n] = ifa->ifa_address;
			n++;
		}
	}
	rcu_read_unlock();
	return n;
}

/*
 * upstream enum_netdev_ipv6_ips(): the device's IPv6 addresses, in list order, under the
 * inet6_dev's lock, into `out` (at most `max`); returns how many there are.
 */
int rdma_rs_netdev_ipv6(struct net_device *dev, struct in6_addr *out, int max)
{
	struct inet6_ifaddr *ifp;
	struct inet6_dev *in6_dev;
	int n = 0;

	if (!IS_ENABLED(CONFIG_IPV6))
		return 0;
	if (READ_ONCE(dev->reg_state) >= NETREG_UNREGISTERING)
		return 0;
	in6_dev = in6_dev_get(dev);
	if (!in6_dev)
		return 0;
	read_lock_bh(&in6_dev->lock);
	list_for_each_entry(ifp, &in6_dev->addr_list, if_list) {
		if (n < max)
			out[n] = ifp->addr;
		n++;
	}
	read_unlock_bh(&in6_dev->lock);
	in6_dev_put(in6_dev);
	return n;
}
