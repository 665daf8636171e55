#ifndef KIROKU_CLIBPQ_SHIM_H
#define KIROKU_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
