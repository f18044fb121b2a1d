// SPDX-License-Identifier: GPL-2.0
/*
 * C shim for rust/kthread.rs: kthread_run() is a macro and get_task_struct()
 * a static inline. The thread's task_struct is referenced from creation to
 * rdma_rs_kthread_stop() (kthread_stop_put()), so stopping is safe whether or
 * not the thread function has started or returned.
 */

#include <linux/err.h>
#include <linux/kthread.h>
#include <linux/sched/task.h>

struct task_struct *rdma_rs_kthread_run(int (*fn)(void *), void *data, const char *name);
int rdma_rs_kthread_stop(struct task_struct *task);
void rdma_rs_cond_resched(void);

struct task_struct *rdma_rs_kthread_run(int (*fn)(void *), void *data, const char *name)
{
	struct task_struct *t = kthread_create(fn, data, "%s", name);

	if (IS_ERR(t))
		return t;
	get_task_struct(t);
	wake_up_process(t);
	return t;
}

int rdma_rs_kthread_stop(struct task_struct *task)
{
	return kthread_stop_put(task);
}

void rdma_rs_cond_resched(void)
{
	cond_resched();
}
