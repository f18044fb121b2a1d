/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The minimum a user-space compiler needs to parse the kernel's
 * include/linux/mlx5/mlx5_ifc.h: the header only declares `u8 name[bits]`
 * layouts and enums, so a `u8` type, the BIT() helpers its enums use, and
 * DECLARE_FLEX_ARRAY (from include/uapi/linux/stddef.h) suffice.
 */
#ifndef PRM_CHECK_SHIM_H
#define PRM_CHECK_SHIM_H

#include <stddef.h>
#include <stdio.h>

typedef unsigned char u8;

#define BIT(nr) (1UL << (nr))
#define BIT_ULL(nr) (1ULL << (nr))
/* Only offsets and sizes are taken, so a zero-length array is equivalent. */
#define DECLARE_FLEX_ARRAY(type, name) type name[0]

/* What device.h's __mlx5_bit_off()/__mlx5_bit_sz() compute. */
#define PRM_OFF(typ, fld) offsetof(struct mlx5_ifc_##typ##_bits, fld)
#define PRM_SZ(typ, fld) sizeof(((struct mlx5_ifc_##typ##_bits *)0)->fld)
#define PRM_ST_SZ(typ) sizeof(struct mlx5_ifc_##typ##_bits)

#endif
