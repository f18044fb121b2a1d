// SPDX-License-Identifier: GPL-2.0

//! Host tests of the data path.
