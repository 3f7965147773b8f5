#include "dispatch/gate.h"
