// SPDX-License-Identifier: GPL-2.0
/*
 * C shim for rust/chrdev.rs's MiscDev: a misc device with a node name, a mode and an
 * abi_version attribute (upstream ucma_misc and its DEVICE_ATTR_RO(abi_version)); the kernel
 * crate's MiscDeviceRegistration of 7.3 sets neither the node name nor the mode nor groups.
 */

#include <linux/device.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

struct rdma_rs_misc {
	struct miscdevice misc;
	const void *data;
	int abi_version;
};

void *rdma_rs_misc_register(const char *name, const char *nodename, umode_t mode,
			    const struct file_operations *fops, const void *data, int abi_version,
			    int *err);
void rdma_rs_misc_deregister(void *m);
const void *rdma_rs_misc_open_file(struct inode *inode, struct file *filp);

static ssize_t abi_version_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct miscdevice *misc = dev_get_drvdata(dev);
	struct rdma_rs_misc *m = container_of(misc, struct rdma_rs_misc, misc);

	return sysfs_emit(buf, "%d\n", m->abi_version);
}
static DEVICE_ATTR_RO(abi_version);

static struct attribute *rdma_rs_misc_attrs[] = {
	&dev_attr_abi_version.attr,
	NULL,
};
ATTRIBUTE_GROUPS(rdma_rs_misc);

/* Registers the device; NULL with *err on failure. `data` is handed to open. */
void *rdma_rs_misc_register(const char *name, const char *nodename, umode_t mode,
			    const struct file_operations *fops, const void *data, int abi_version,
			    int *err)
{
	struct rdma_rs_misc *m = kzalloc(sizeof(*m), GFP_KERNEL);

	if (!m) {
		*err = -ENOMEM;
		return NULL;
	}
	m->misc.minor = MISC_DYNAMIC_MINOR;
	m->misc.name = name;
	m->misc.nodename = nodename;
	m->misc.mode = mode;
	m->misc.fops = fops;
	m->misc.groups = rdma_rs_misc_groups;
	m->data = data;
	m->abi_version = abi_version;
	*err = misc_register(&m->misc);
	if (*err) {
		kfree(m);
		return NULL;
	}
	return m;
}

/* misc_deregister() (no open is in progress once it returns: misc_open() holds misc_mtx). */
void rdma_rs_misc_deregister(void *p)
{
	struct rdma_rs_misc *m = p;

	misc_deregister(&m->misc);
	kfree(m);
}

/* In open: the registration's data (misc_open() set private_data to the miscdevice), and the
 * file made a stream (upstream ucma_open(): stream_open()). */
const void *rdma_rs_misc_open_file(struct inode *inode, struct file *filp)
{
	struct rdma_rs_misc *m = container_of(filp->private_data, struct rdma_rs_misc, misc);

	stream_open(inode, filp);
	return m->data;
}
