/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C shims for rust/netlink.rs: static inlines and macros of the netlink and
 * socket headers that the kernel crate's bindings cannot call.
 */
#ifndef RDMA_RS_NETLINK_H
#define RDMA_RS_NETLINK_H

#include <linux/types.h>

struct sk_buff;
struct sock;

/* nlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL) */
struct sk_buff *rdma_rs_nlmsg_new_default(void);
/* skb_tail_pointer() and skb_tailroom() */
void *rdma_rs_skb_tail(struct sk_buff *skb, unsigned int *room);
/* skb->data and skb->len */
const void *rdma_rs_skb_data(const struct sk_buff *skb, unsigned int *len);
/* NETLINK_CB(skb).portid */
u32 rdma_rs_skb_portid(const struct sk_buff *skb);
/* skb->sk */
struct sock *rdma_rs_skb_sk(const struct sk_buff *skb);
/* nlmsg_unicast(): netlink_unicast(.., MSG_DONTWAIT), 0 on success */
int rdma_rs_nlmsg_unicast(struct sock *sk, struct sk_buff *skb, u32 portid);
/* READ_ONCE/WRITE_ONCE of sk->sk_user_data */
void *rdma_rs_sk_user_data(const struct sock *sk);
void rdma_rs_sk_set_user_data(struct sock *sk, void *data);
/* sock_hold(), sock_put(), refcount_read(&sk->sk_refcnt) */
void rdma_rs_sock_hold(struct sock *sk);
void rdma_rs_sock_put(struct sock *sk);
unsigned int rdma_rs_sock_refs(const struct sock *sk);
int rdma_rs_nlmsg_multicast(struct sock *sk, struct sk_buff *skb, u32 group);
/* sk->sk_sndtimeo = secs * HZ */
void rdma_rs_sk_set_sndtimeo(struct sock *sk, unsigned int secs);

#endif
