// SPDX-License-Identifier: GPL-2.0
/* C shim for rust/anon_file.rs: anon_inode_getfile() has no Rust binding in 7.3. */

#include <linux/anon_inodes.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/module.h>

struct file *rdma_rs_anon_inode_getfile(const char *name, const struct file_operations *fops,
					 void *priv, int flags);

struct file *rdma_rs_anon_inode_getfile(const char *name, const struct file_operations *fops,
					 void *priv, int flags)
{
	return anon_inode_getfile(name, fops, priv, flags);
}

/* A driver's fd object pins the driver's module (upstream: its fops.owner). */
void rdma_rs_module_get(struct module *m);
void rdma_rs_module_put(struct module *m);

void rdma_rs_module_get(struct module *m)
{
	__module_get(m);
}

void rdma_rs_module_put(struct module *m)
{
	module_put(m);
}
