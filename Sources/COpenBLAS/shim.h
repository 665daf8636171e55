#ifndef KIROKU_COPENBLAS_SHIM_H
#define KIROKU_COPENBLAS_SHIM_H
#include <cblas.h>
#endif
