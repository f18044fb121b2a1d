// SPDX-License-Identifier: GPL-2.0
/* C shims for rust/netlink.rs, declared in include/rdma_rs_netlink.h. */

#include <net/netlink.h>
#include <net/sock.h>
#include "../include/rdma_rs_netlink.h"

struct sk_buff *rdma_rs_nlmsg_new_default(void)
{
	return nlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
}

void *rdma_rs_skb_tail(struct sk_buff *skb, unsigned int *room)
{
	*room = skb_tailroom(skb);
	return skb_tail_pointer(skb);
}

const void *rdma_rs_skb_data(const struct sk_buff *skb, unsigned int *len)
{
	*len = skb->len;
	return skb->data;
}

u32 rdma_rs_skb_portid(const struct sk_buff *skb)
{
	return NETLINK_CB(skb).portid;
}

struct sock *rdma_rs_skb_sk(const struct sk_buff *skb)
{
	return skb->sk;
}

int rdma_rs_nlmsg_unicast(struct sock *sk, struct sk_buff *skb, u32 portid)
{
	return nlmsg_unicast(sk, skb, portid);
}

void *rdma_rs_sk_user_data(const struct sock *sk)
{
	return READ_ONCE(sk->sk_user_data);
}

void rdma_rs_sk_set_user_data(struct sock *sk, void *data)
{
	WRITE_ONCE(sk->sk_user_data, data);
}

void rdma_rs_sock_hold(struct sock *sk)
{
	sock_hold(sk);
}

void rdma_rs_sock_put(struct sock *sk)
{
	sock_put(sk);
}

unsigned int rdma_rs_sock_refs(const struct sock *sk)
{
	return refcount_read(&sk->sk_refcnt);
}

void rdma_rs_sk_set_sndtimeo(struct sock *sk, unsigned int secs)
{
	sk->sk_sndtimeo = secs * HZ;
}

int rdma_rs_nlmsg_multicast(struct sock *sk, struct sk_buff *skb, u32 group)
{
	return nlmsg_multicast(sk, skb, 0, group, GFP_KERNEL);
}
