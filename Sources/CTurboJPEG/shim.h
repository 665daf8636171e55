#ifndef KIROKU_CTURBOJPEG_SHIM_H
#define KIROKU_CTURBOJPEG_SHIM_H
#include <stddef.h>
#include <turbojpeg.h>
#endif
