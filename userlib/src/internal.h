/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Private helpers of libwsem: hidden, and named libwsem_* so that no
 * name of the public wsem_* kind is taken by one (libwsem.map lists
 * what is exported, by name).
 */
#ifndef LIBWSEM_INTERNAL_H
#define LIBWSEM_INTERNAL_H

#include <linux/wsem.h>

#define LIBWSEM_HIDDEN	__attribute__((visibility("hidden")))
#define LIBWSEM_DEVICE	"/dev/wsem"

LIBWSEM_HIDDEN int libwsem_dev_open(int cloexec, int watch);
LIBWSEM_HIDDEN void libwsem_close_keep_errno(int fd);
LIBWSEM_HIDDEN int libwsem_name_copy(char dst[WSEM_NAME_MAX],
				     const char *name);
LIBWSEM_HIDDEN int libwsem_check_path(const char *path);
LIBWSEM_HIDDEN int libwsem_einval(void);
LIBWSEM_HIDDEN const struct wsem_tree_counters *libwsem_map_tree(int fd);
LIBWSEM_HIDDEN int libwsem_unmap_tree(const struct wsem_tree_counters *t);

#endif /* LIBWSEM_INTERNAL_H */
