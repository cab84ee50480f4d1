/* nrt.h: kept for programs that include it by its old name; the API is in nrt/nrt.h and the other nrt/ headers. */
#include "nrt/nrt.h"
