// prctl(2), as ShopKitCore sees it: Swift cannot call the variadic prctl.
// Only static inline wrappers for macros and variadic functions that Swift cannot call; no logic.
#ifndef SHOPKIT_CPROCESSCONTROL_SHIM_H
#define SHOPKIT_CPROCESSCONTROL_SHIM_H

#include <sys/prctl.h>

static inline int shopkit_prctl_set_dumpable(int dumpable) {
    return prctl(PR_SET_DUMPABLE, (unsigned long)dumpable, 0UL, 0UL, 0UL);
}

static inline int shopkit_prctl_get_dumpable(void) {
    return prctl(PR_GET_DUMPABLE, 0UL, 0UL, 0UL, 0UL);
}

#endif
