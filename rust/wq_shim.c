// SPDX-License-Identifier: GPL-2.0
/*
 * C shim for rust/wq.rs: alloc_workqueue() and flush_workqueue() are macros.
 */

#include <linux/workqueue.h>

struct workqueue_struct *rdma_rs_alloc_wq(const char *name);
void rdma_rs_flush_wq(struct workqueue_struct *wq);
void rdma_rs_destroy_wq(struct workqueue_struct *wq);
struct workqueue_struct *rdma_rs_alloc_ordered_wq(const char *name);

struct workqueue_struct *rdma_rs_alloc_wq(const char *name)
{
	/* Unbound: the work items sleep (port cache refresh, client event handlers). */
	return alloc_workqueue("%s", WQ_UNBOUND, 0, name);
}

void rdma_rs_flush_wq(struct workqueue_struct *wq)
{
	flush_workqueue(wq);
}

void rdma_rs_destroy_wq(struct workqueue_struct *wq)
{
	destroy_workqueue(wq);
}

struct workqueue_struct *rdma_rs_alloc_ordered_wq(const char *name)
{
	/* upstream roce_gid_mgmt_init(): gid_cache_wq, ordered (address events in order). */
	return alloc_ordered_workqueue("%s", 0, name);
}

/*
 * A cancelable delayed call on the core's queue (rust/wq.rs `Timer`): the kernel crate's
 * DelayedWork has no cancel. `stopped` under `lock` makes an arm after the stop a no-op, so
 * that after rdma_rs_timer_stop() returns the callback neither runs nor is pending.
 */
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/timekeeping.h>

struct rdma_rs_timer {
	struct delayed_work dw;
	spinlock_t lock;
	bool stopped;
	/* When the pending firing is due (jiffies), as last armed. */
	unsigned long due;
	void (*fn)(void *data);
	void *data;
};

struct rdma_rs_timer *rdma_rs_timer_new(void (*fn)(void *data), void *data);
void rdma_rs_timer_arm(struct workqueue_struct *wq, struct rdma_rs_timer *t,
		       unsigned int ms);
void rdma_rs_timer_stop(struct rdma_rs_timer *t);
void rdma_rs_timer_free(struct rdma_rs_timer *t);
u64 rdma_rs_now_ms(void);

static void rdma_rs_timer_run(struct work_struct *w)
{
	struct rdma_rs_timer *t = container_of(to_delayed_work(w), struct rdma_rs_timer, dw);

	t->fn(t->data);
}

struct rdma_rs_timer *rdma_rs_timer_new(void (*fn)(void *data), void *data)
{
	struct rdma_rs_timer *t = kzalloc(sizeof(*t), GFP_KERNEL);

	if (!t)
		return NULL;
	INIT_DELAYED_WORK(&t->dw, rdma_rs_timer_run);
	spin_lock_init(&t->lock);
	t->fn = fn;
	t->data = data;
	return t;
}

void rdma_rs_timer_arm(struct workqueue_struct *wq, struct rdma_rs_timer *t,
		       unsigned int ms)
{
	unsigned long flags;

	unsigned long delay = msecs_to_jiffies(ms);
	unsigned long due = jiffies + delay;

	spin_lock_irqsave(&t->lock, flags);
	/*
	 * A pending firing due at or before the new time is kept: replacing it would postpone
	 * a run that was asked for sooner (a completion's arm(0) overtaken by a timeout's
	 * arm(ms) would wait for the timeout). `due` is kept here rather than read from the
	 * timer, which an arming for "at once" (queued without the timer) leaves stale.
	 */
	if (!t->stopped &&
	    !(delayed_work_pending(&t->dw) && time_before_eq(t->due, due))) {
		t->due = due;
		mod_delayed_work(wq, &t->dw, delay);
	}
	spin_unlock_irqrestore(&t->lock, flags);
}

void rdma_rs_timer_stop(struct rdma_rs_timer *t)
{
	unsigned long flags;

	spin_lock_irqsave(&t->lock, flags);
	t->stopped = true;
	spin_unlock_irqrestore(&t->lock, flags);
	cancel_delayed_work_sync(&t->dw);
}

void rdma_rs_timer_free(struct rdma_rs_timer *t)
{
	kfree(t);
}

u64 rdma_rs_now_ms(void)
{
	return ktime_to_ms(ktime_get());
}
