// SPDX-License-Identifier: GPL-2.0
/*
 * C shim for rust/umem.rs and rust/mm.rs: static inlines and macros that the
 * Rust bindings of 7.3 do not reach (current->mm and its pinned_vm counter,
 * rlimit(), page_to_phys(), ZERO_PAGE(), get_page(), pgprot_noncached(),
 * io_remap_pfn_range()), and task work at the return to user space (rdma_rs_on_resume()).
 */

#include <linux/atomic.h>
#include <linux/capability.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task_stack.h>
#include <linux/slab.h>
#include <linux/task_work.h>
#include <linux/uaccess.h>
#ifdef CONFIG_X86_64
#include <asm/ptrace.h>
#endif

int rdma_rs_umem_account(unsigned long npages, struct mm_struct **mmp);
void rdma_rs_umem_unaccount(struct mm_struct *mm, unsigned long npages);
u64 rdma_rs_page_to_phys(struct page *page);
struct mm_struct *rdma_rs_current_mm(void);
vm_fault_t rdma_rs_fault_install(struct vm_fault *vmf, struct page *page);
struct vm_area_struct *rdma_rs_vmf_vma(struct vm_fault *vmf);
vm_fault_t rdma_rs_trap_insert(struct vm_fault *vmf, struct page *page);
int rdma_rs_io_remap(struct vm_area_struct *vma, unsigned long pfn, unsigned long size,
		     int wc);
int rdma_rs_access_ok(u64 addr, u64 size);
int rdma_rs_store_fault(struct vm_fault *vmf, u64 *gpr, u64 *ip, u64 *addr, u8 *insn,
			unsigned int *len);
void rdma_rs_store_done(u64 ip);
int rdma_rs_on_resume(void (*fn)(void *data), void *data, struct module *owner);

/* access_ok() (a macro): whether [addr, addr + size) is a user address range. */
int rdma_rs_access_ok(u64 addr, u64 size)
{
	return access_ok(u64_to_user_ptr(addr), size);
}

/*
 * upstream __ib_umem_get_va(): mmgrab(current->mm), then account npages in
 * mm->pinned_vm against RLIMIT_MEMLOCK unless CAP_IPC_LOCK. On success *mmp
 * holds the grabbed mm (released by rdma_rs_umem_unaccount()).
 */
int rdma_rs_umem_account(unsigned long npages, struct mm_struct **mmp)
{
	struct mm_struct *mm = current->mm;
	unsigned long lock_limit;
	unsigned long new_pinned;

	if (!mm)
		return -EFAULT;
	mmgrab(mm);
	lock_limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	new_pinned = atomic64_add_return(npages, &mm->pinned_vm);
	if (new_pinned > lock_limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		mmdrop(mm);
		return -ENOMEM;
	}
	*mmp = mm;
	return 0;
}

/* upstream ib_umem_release(): atomic64_sub(npages, &mm->pinned_vm); mmdrop(mm). */
void rdma_rs_umem_unaccount(struct mm_struct *mm, unsigned long npages)
{
	atomic64_sub(npages, &mm->pinned_vm);
	mmdrop(mm);
}

struct mm_struct *rdma_rs_current_mm(void)
{
	return current->mm;
}

u64 rdma_rs_page_to_phys(struct page *page)
{
	return page_to_phys(page);
}

/*
 * A fault answered with a page (upstream rdma_umap_fault()): NULL means the
 * system zero page of the address.
 */
vm_fault_t rdma_rs_fault_install(struct vm_fault *vmf, struct page *page)
{
	if (!page)
		page = ZERO_PAGE(vmf->address);
	get_page(page);
	vmf->page = page;
	return 0;
}

/*
 * A trap page's fault (rust/mm.rs TrapPage): install the page into the
 * mixed-map VMA now, writable for a write fault, and report VM_FAULT_NOPAGE.
 */
vm_fault_t rdma_rs_trap_insert(struct vm_fault *vmf, struct page *page)
{
	return vmf_insert_page_mkwrite(vmf, page, vmf->flags & FAULT_FLAG_WRITE);
}

struct vm_area_struct *rdma_rs_vmf_vma(struct vm_fault *vmf)
{
	return vmf->vma;
}

/*
 * upstream rdma_user_mmap_io(): vm_page_prot = prot; io_remap_pfn_range() of
 * the whole VMA. wc: 1 write-combining, 0 uncached.
 */
int rdma_rs_io_remap(struct vm_area_struct *vma, unsigned long pfn, unsigned long size, int wc)
{
	pgprot_t prot = wc ? pgprot_writecombine(vma->vm_page_prot) :
			     pgprot_noncached(vma->vm_page_prot);

	vma->vm_page_prot = prot;
	return io_remap_pfn_range(vma, vma->vm_start, pfn, size, prot);
}

/*
 * A write fault of the current task in user space, for rust/mm.rs's store emulation of a
 * trap page (as mmiotrace and KVM's MMIO emulation decode a faulting access): the user's
 * general-purpose registers in encoding order (rax, rcx, rdx, rbx, rsp, rbp, rsi, rdi,
 * r8..r15), its instruction pointer, the exact faulting address, and up to 15 bytes of the
 * instruction (*len of them: fewer where the next page is not present). Read without
 * faulting (copy_from_user_nofault(): the caller holds the mm's or the VMA's lock). -EINVAL
 * for anything the emulation does not handle: a kernel access (GUP, a syscall's copy), a
 * read, a task not in 64-bit mode, single-stepping; -EFAULT if the instruction cannot be
 * read; -EOPNOTSUPP on other architectures.
 */
int rdma_rs_store_fault(struct vm_fault *vmf, u64 *gpr, u64 *ip, u64 *addr, u8 *insn,
			unsigned int *len)
{
#ifdef CONFIG_X86_64
	struct pt_regs *regs = task_pt_regs(current);
	unsigned long avail;

	if ((vmf->flags & (FAULT_FLAG_USER | FAULT_FLAG_WRITE)) !=
	    (FAULT_FLAG_USER | FAULT_FLAG_WRITE) || !current->mm ||
	    current->mm != vmf->vma->vm_mm)
		return -EINVAL;
	if (!user_64bit_mode(regs) || (regs->flags & X86_EFLAGS_TF))
		return -EINVAL;
	gpr[0] = regs->ax;
	gpr[1] = regs->cx;
	gpr[2] = regs->dx;
	gpr[3] = regs->bx;
	gpr[4] = regs->sp;
	gpr[5] = regs->bp;
	gpr[6] = regs->si;
	gpr[7] = regs->di;
	gpr[8] = regs->r8;
	gpr[9] = regs->r9;
	gpr[10] = regs->r10;
	gpr[11] = regs->r11;
	gpr[12] = regs->r12;
	gpr[13] = regs->r13;
	gpr[14] = regs->r14;
	gpr[15] = regs->r15;
	*ip = regs->ip;
	*addr = vmf->real_address;
	avail = PAGE_SIZE - (regs->ip & ~PAGE_MASK);
	if (avail > 15)
		avail = 15;
	if (copy_from_user_nofault(insn, (const void __user *)regs->ip, avail))
		return -EFAULT;
	*len = avail;
	if (avail < 15 &&
	    !copy_from_user_nofault(insn + avail, (const void __user *)(regs->ip + avail),
				    15 - avail))
		*len = 15;
	return 0;
#else
	return -EOPNOTSUPP;
#endif
}

/*
 * The store rdma_rs_store_fault() described was emulated: the task resumes at ip (the next
 * instruction) when the fault returns.
 */
void rdma_rs_store_done(u64 ip)
{
#ifdef CONFIG_X86_64
	task_pt_regs(current)->ip = ip;
#endif
}

/* A call queued by rdma_rs_on_resume(). */
struct rdma_rs_resume {
	struct callback_head cb;
	void (*fn)(void *data);
	void *data;
	struct module *owner;
};

static void rdma_rs_resume_run(struct callback_head *cb)
{
	struct rdma_rs_resume *r = container_of(cb, struct rdma_rs_resume, cb);
	struct module *owner = r->owner;

	r->fn(r->data);
	kfree(r);
	module_put(owner);
}

/*
 * fn(data) called by the current task on its way back to user space (task_work_add() with
 * TWA_RESUME: after the page fault that queues it has returned and its locks are released,
 * on the stack the task has as it leaves the kernel; or at its exit), with a reference on
 * owner (the module whose code fn reaches) held until fn returns. 0, or -ENOMEM, -ENODEV (owner
 * is being unloaded) or task_work_add()'s -ESRCH (the task is exiting): then fn is never
 * called and data stays the caller's.
 */
int rdma_rs_on_resume(void (*fn)(void *data), void *data, struct module *owner)
{
	struct rdma_rs_resume *r;
	int ret;

	r = kmalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	if (!try_module_get(owner)) {
		kfree(r);
		return -ENODEV;
	}
	init_task_work(&r->cb, rdma_rs_resume_run);
	r->fn = fn;
	r->data = data;
	r->owner = owner;
	ret = task_work_add(current, &r->cb, TWA_RESUME);
	if (ret) {
		module_put(owner);
		kfree(r);
	}
	return ret;
}
