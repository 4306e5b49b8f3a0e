#ifndef CARETAKER_CLIBPQ_SHIM_H
#define CARETAKER_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
