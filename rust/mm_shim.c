// SPDX-License-Identifier: GPL-2.0
/*
 * C shim for rust/umem.rs and rust/mm.rs: static inlines and macros that the
 * Rust bindings of 7.3 do not reach (current->mm and its pinned_vm counter,
 * rlimit(), page_to_phys(), ZERO_PAGE(), get_page(), pgprot_noncached(),
 * io_remap_pfn_range()).
 */

#include <linux/atomic.h>
#include <linux/capability.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/uaccess.h>

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
