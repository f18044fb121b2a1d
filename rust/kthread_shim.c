// SPDX-License-Identifier: GPL-2.0
/*
 * C shim for rust/kthread.rs: kthread_run() is a macro and get_task_struct()
 * a static inline. The thread's task_struct is referenced from creation to
 * rdma_rs_kthread_stop() (kthread_stop_put()), so stopping is safe whether or
 * not the thread function has started or returned.
 */

#include <linux/cpumask.h>
#include <linux/err.h>
#include <linux/kthread.h>
#include <linux/sched.h>
#include <linux/sched/stat.h>
#include <linux/sched/task.h>

struct task_struct *rdma_rs_kthread_run(int (*fn)(void *), void *data, const char *name);
int rdma_rs_kthread_stop(struct task_struct *task);
void rdma_rs_cond_resched(void);
int rdma_rs_move_off_cpu(unsigned int cpu);
bool rdma_rs_alone_on_cpu(void);

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

/*
 * Restricts the calling task to the online CPUs other than @cpu, which
 * migrates it at once if it runs there. -ENODEV when no other CPU is online.
 */
int rdma_rs_move_off_cpu(unsigned int cpu)
{
	cpumask_var_t m;
	int ret;

	if (cpu >= nr_cpu_ids)
		return -EINVAL;
	if (!zalloc_cpumask_var(&m, GFP_KERNEL))
		return -ENOMEM;
	cpumask_andnot(m, cpu_online_mask, cpumask_of(cpu));
	ret = cpumask_empty(m) ? -ENODEV : set_cpus_allowed_ptr(current, m);
	free_cpumask_var(m);
	return ret;
}

/* single_task_running(): whether the caller is the only runnable task of its CPU. */
bool rdma_rs_alone_on_cpu(void)
{
	return single_task_running();
}
