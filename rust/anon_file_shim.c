// SPDX-License-Identifier: GPL-2.0
/* C shim for rust/anon_file.rs: anon_inode_getfile() has no Rust binding in 7.3. */

#include <linux/anon_inodes.h>
#include <linux/err.h>
#include <linux/fs.h>

struct file *rdma_rs_anon_inode_getfile(const char *name, const struct file_operations *fops,
					 void *priv, int flags);

struct file *rdma_rs_anon_inode_getfile(const char *name, const struct file_operations *fops,
					 void *priv, int flags)
{
	return anon_inode_getfile(name, fops, priv, flags);
}
